"""Everything a start does before the agent's services run: harness, model, ports, needs, tools, settings.

The result is the RunSpec the supervisor runs from. What asks the owner (needs) happens here, in
the terminal of `lnk agent start`, never in a background service. `prepare` reads as the start's
steps, in order:

1. the harness and the model, as given or as the agent had them;
2. the port block, saved with the agent: the harness's ports, then lnk's gateway (the last);
3. four questions to the adapter, asked at once: what it needs, its endpoint, the channels it
   speaks itself, the folders it writes;
4. whether it runs in a sandbox (sandbox_choice), asking the owner for what it needs;
5. the tools (memory, the scheduler) and their URLs (through the sandbox's proxy, or lnk's
   gateway), and where the model is (harness_settings);
6. which channels a bridge carries (a harness with an endpoint) or the harness speaks itself;
7. the settings written, `install` once and `configure` (harness_setup), then the settings again
   with the endpoint's key, and the adapter's answer to `start`: how the harness runs;
8. the RunSpec, with the sandbox request when the harness runs in one.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from link_plugin.channel import EndpointRef
from link_plugin.errors import LinkError
from link_plugin.harness import ENV_MEMORY, ENV_TOOLS, Description, Endpoint, ModelRef, Needs
from link_plugin.providers import no_model
from link_plugin.sandbox import PROXY_PORT, TOOLS_PATH, SandboxRequest, tool_url
from link_plugin.wire import new_endpoint_key
from lnk import __version__, memory, scheduler
from lnk.agents import Agent, all_agents
from lnk.channels import ChannelEntry
from lnk.harness_settings import harness_settings, model_ref
from lnk.harness_setup import install_once, set_up
from lnk.harnesses import Harness, harness_of
from lnk.models import check_model, default_model, held_key, keys_wired, loopback_port
from lnk.ports import check_free, choose_block
from lnk.runstate import Mode, RunSpec
from lnk.sandbox_choice import check_allowed, choose_sandbox
from lnk.sandboxing import grants, program_reads
from lnk.tooldefs import ToolDef, tools_for

Say = Callable[[str], None]


@dataclass
class StartOptions:
    harness: str | None = None
    model: str | None = None
    no_sandbox: bool = False
    yes: bool = False
    allow_unsandboxed: bool = False
    mode: Mode = "detached"


@dataclass
class Block:
    """The agent's ports: the harness's first (its endpoint on the first), lnk's gateway the last."""

    ports: list[int]
    harness: list[int]

    @property
    def first(self) -> int:
        return self.ports[0]

    @property
    def gateway(self) -> int:
        return self.ports[-1]


@dataclass
class Asked:
    """The adapter's four answers, asked at once, each read where a step needs it: an answer the
    start doesn't use (the folders, without a sandbox) can't fail it."""

    needs: Future[Needs]
    endpoint: Future[Endpoint | None]
    channels: Future[list[str]]
    folders: Future[list[str]]


@dataclass
class Tools:
    """The agent's tools and where its harness reaches each: through the sandbox's proxy, or the
    gateway (its address holds a secret only the harness's settings name)."""

    secret: str
    gateway: str
    defined: list[ToolDef]
    urls: dict[str, str]
    memory: ToolDef | None


@dataclass
class HarnessRun:
    """How the harness runs, as the adapter's `start` said: here, or by its sandbox request."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    request: SandboxRequest | None
    settings_file: str


def choose_model(agent: Agent, given: str | None) -> str:
    if given:
        return check_model(given)
    if agent.settings.model:
        return agent.settings.model
    found = default_model(agent.keys)
    if found is None:
        raise no_model(agent.name)
    return found


def prepare(agent: Agent, options: StartOptions, say: Say) -> tuple[Agent, RunSpec]:
    """The start's steps, in order (above): the agent as saved, and what its supervisor runs."""
    check_allowed(agent, options)
    harness = harness_of(agent, options.harness)
    model = choose_model(agent, options.model)
    agent, block, description = _place(agent, harness, model)
    entries = {name: ChannelEntry.of(agent, name) for name in agent.settings.channels}
    asked = _ask(agent, harness, model, block, description)
    endpoint = asked.endpoint.result()
    sandboxed, decision = choose_sandbox(agent, harness, asked.needs.result(), options, say)
    tools = _tools(agent, harness, block, sandboxed, endpoint, say)
    wired = keys_wired(agent.settings)
    ref = model_ref(agent, model, sandboxed, tools.gateway, wired)
    held = _held(agent, ref, wired)
    bridges, sections = _channels(harness, entries, endpoint, asked.channels.result(), say)
    write = partial(
        harness_settings,
        agent,
        harness,
        ports=block.harness,
        tools=tools.urls,
        channels=sections,
        proxied=sandboxed,
        allowed=decision.risks,
    )
    env = harness.env(block.first, write(model=ref))  # install and configure never see a key the harness holds
    install_once(agent, harness, env, sandboxed, description, say)
    set_up(agent, harness, "configure", env, sandboxed, description)
    key = new_endpoint_key()
    env = harness.env(block.first, write(model=held, key=key))
    run = _harness_run(agent, harness, block, description, env, tools, ref, asked.folders if sandboxed else None)
    return agent, _run_spec(
        agent, harness, options, block, tools, run, sandboxed, _relayed(ref, sandboxed, wired), endpoint, key, bridges
    )


def _place(agent: Agent, harness: Harness, model: str) -> tuple[Agent, Block, Description]:
    """The agent's port block, as many ports as the harness asks and one for lnk's gateway, clear of
    every other agent's; saved with the harness and model, checked free. And the adapter's
    description, which names its endpoint on the block's first port."""
    asked = agent.port
    description = harness.description(agent.layout, asked)
    ports_answer = harness.ports(asked, description)
    others = [other.settings.ports for other in all_agents(agent.layout) if other.id != agent.id]
    block = choose_block(agent.name, ports_answer.count + 1, ports_answer.default, agent.settings.ports, others)
    agent = agent.with_settings(harness=harness.name, model=model, ports=block)
    agent.save()
    check_free(agent.name, block)
    agent.folder.create()
    if block[0] != asked:  # where a first start (or a move) put the block: the endpoint is there
        description = harness.description(agent.layout, block[0])
    return agent, Block(ports=block, harness=block[: ports_answer.count]), description


def _ask(agent: Agent, harness: Harness, model: str, block: Block, description: Description) -> Asked:
    """What the harness needs, its endpoint, the channels it speaks and the folders it writes, asked
    at once with settings that name the model as a sandboxed harness would reach it."""
    question = harness.env(block.first, harness_settings(agent, harness, model=model_ref(agent, model, True, "")))
    with ThreadPoolExecutor(max_workers=4) as pool:
        return Asked(
            needs=pool.submit(harness.needs, question, description),
            endpoint=pool.submit(harness.endpoint, block.first, description),
            channels=pool.submit(harness.channels, question, description),
            folders=pool.submit(harness.folders, block.first, description),
        )


def proxy_port(block: list[int]) -> int | None:
    """Where a sandboxed harness's proxy answers, when lnk names it: on a Mac, the block's last port
    on this machine's loopback; on Linux the sandbox's own (PROXY_PORT), in the harness's network."""
    return block[-1] if sys.platform == "darwin" else None


def _tools(agent: Agent, harness: Harness, block: Block, sandboxed: bool, endpoint: Endpoint | None, say: Say) -> Tools:
    """The agent's tools (its memory among them, its notes read-only where the owner kept them so,
    and its scheduler for a harness with an endpoint), each reached through the sandbox's proxy, or
    through lnk's gateway without a sandbox."""
    secret = secrets.token_urlsafe(24)
    gateway = f"http://127.0.0.1:{block.gateway}/{secret}"
    notes_writable = not (
        sandboxed and agent.settings.memory and "instructions" in grants(agent, harness.name).files_read
    )
    memory_tool = memory.define(agent, notes_writable)
    scheduler.define(agent, endpoint, say)
    defined = tools_for(agent.layout, agent.name)
    if sandboxed:
        urls = {tool.name: tool_url(tool.name, proxy_port(block.ports) or PROXY_PORT) for tool in defined}
    else:
        urls = {tool.name: f"{gateway}{TOOLS_PATH}{tool.name}/mcp" for tool in defined}
    return Tools(secret=secret, gateway=gateway, defined=defined, urls=urls, memory=memory_tool)


def _held(agent: Agent, ref: ModelRef, wired: bool) -> ModelRef:
    """The model as the harness's start is told it: with the key, for a harness that holds its own.
    Not wired, the harness is handed its key at start only, never at install or configure."""
    if wired or ref.provider == "local":
        return ref
    return ref.model_copy(update={"key": held_key(agent.name, agent.keys, ref.provider)})


def _relayed(ref: ModelRef, sandboxed: bool, wired: bool) -> str | None:
    """The provider whose key lnk's gateway adds: a harness without a sandbox, calling a hosted model
    with keys wired. (In a sandbox its proxy adds it.)"""
    return None if sandboxed or ref.provider == "local" or not wired else ref.provider


def _channels(
    harness: Harness,
    entries: dict[str, ChannelEntry],
    endpoint: Endpoint | None,
    spoken: list[str],
    say: Say,
) -> tuple[list[str], dict[str, dict[str, object]]]:
    """Which channels a bridge carries to the harness's endpoint, and the sections of those the
    harness speaks itself (one without an endpoint); a channel it doesn't speak stays connected."""
    if endpoint is not None:
        return sorted(entries), {}
    speaks = set(spoken)
    for name in sorted(set(entries) - speaks):
        say(f"[yellow]{harness.name} doesn't speak {name}: it stays connected for another harness.[/yellow]")
    return [], {name: dict(e.section) for name, e in entries.items() if name in speaks}


def _writes(agent: Agent, names: list[str]) -> list[str]:
    """The adapter's `folders`, as paths in the agent's folder."""
    folder = agent.folder
    resolved = []
    for name in names:
        if name.startswith("/") or ".." in Path(name).parts:
            raise LinkError(f"The harness asks to write {name!r}, which is not a folder of the agent's.")
        resolved.append(str({"Home": folder.home, "chats": folder.chats}.get(name, folder.root / name)))
    return resolved


def _harness_run(
    agent: Agent,
    harness: Harness,
    block: Block,
    description: Description,
    env: dict[str, str],
    tools: Tools,
    ref: ModelRef,
    folders: Future[list[str]] | None,
) -> HarnessRun:
    """The adapter's `start`, with the tools' URLs (and memory's) added to its environment; with
    `folders` (a sandboxed harness) the request lnk-sandbox runs it by: the folders it writes, its
    ports, a local model's port, its tools."""
    start = harness.start(env, description)
    run_env = {**start.env, **env, ENV_TOOLS: json.dumps(tools.urls)}
    if tools.memory is not None:
        run_env[ENV_MEMORY] = tools.urls[tools.memory.name]
    cwd = start.cwd or str(harness.home)
    request = None
    if folders is not None:
        request = SandboxRequest(
            agent=agent.name,
            mode="harness",
            harness=harness.name,
            argv=start.argv,
            env=run_env,
            cwd=cwd,
            writes=_writes(agent, folders.result()),
            reads=program_reads(start.argv),
            ports=block.harness,
            model_port=loopback_port(ref.url) if ref.provider == "local" else None,
            tools=sorted(tools.urls),
            wire_keys=keys_wired(agent.settings),
            proxy_port=proxy_port(block.ports),
        )
    return HarnessRun(argv=start.argv, env=run_env, cwd=cwd, request=request, settings_file=env["LNK_SETTINGS"])


def _endpoint_ref(endpoint: Endpoint | None, key: str) -> EndpointRef | None:
    """The endpoint as its bridges and the scheduler's runner are told it."""
    if endpoint is None:
        return None
    return EndpointRef(url=endpoint.url, key=key, proof=endpoint.proof, agent=endpoint.agent, tools=endpoint.tools)


def _run_spec(
    agent: Agent,
    harness: Harness,
    options: StartOptions,
    block: Block,
    tools: Tools,
    run: HarnessRun,
    sandboxed: bool,
    relayed: str | None,
    endpoint: Endpoint | None,
    key: str,
    bridges: list[str],
) -> RunSpec:
    """What the supervisor runs from."""
    return RunSpec(
        agent=agent.name,
        id=agent.id,
        owner=agent.settings.owner,
        harness=harness.name,
        adapter=harness.path,
        harness_home=str(harness.home),
        sandboxed=sandboxed,
        no_sandbox=options.no_sandbox,
        mode=options.mode,
        ports=block.ports,
        gateway=block.gateway,
        secret=tools.secret,
        provider=relayed,
        endpoint=EndpointRef(
            url=endpoint.url, key=key, proof=endpoint.proof, agent=endpoint.agent, tools=endpoint.tools
        )
        if endpoint
        else None,
        argv=run.argv,
        env=run.env,
        cwd=run.cwd,
        request=run.request,
        tools=tools.defined,
        tool_urls=tools.urls,
        bridges=bridges,
        settings_file=run.settings_file,
        lnk=__version__,
    )
