"""Everything a start does before the agent's services run: harness, model, ports, needs, tools, settings.

The result is the RunSpec the supervisor runs from. What asks the owner (needs) happens here, in
the terminal of `lnk agent start`, never in a background service.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from link_plugin.channel import EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.errors import LinkError
from link_plugin.files import write_atomic
from link_plugin.harness import (
    ENV_MEMORY,
    ENV_TOOLS,
    AgentFolders,
    AgentRef,
    Description,
    Done,
    Endpoint,
    HarnessSettings,
    ModelRef,
    Needs,
)
from link_plugin.harness import Turns as _Turns
from link_plugin.providers import PROVIDERS, provider_of
from link_plugin.sandbox import PROXY_PORT, TOOLS_PATH, Decision, SandboxRequest, tool_url
from link_plugin.wire import new_endpoint_key
from lnk import __version__, memory
from lnk.agents import Agent, all_agents
from lnk.channels import ChannelEntry
from lnk.harnesses import Harness
from lnk.known import DEFAULT_HARNESS
from lnk.machine import load_machine
from lnk.models import check_model, default_model, held_key, keys_wired, local_server, loopback_port, no_model
from lnk.plugins import require
from lnk.ports import check_free, choose_block
from lnk.runstate import Mode, RunSpec
from lnk.sandboxing import SANDBOX, answer_in_sandbox, ask_needs, grants, program_reads
from lnk.tooldefs import tools_for

SETTINGS_FILE = ".lnk-settings.json"
INSTALLED_FILE = ".lnk-installed"

Say = Callable[[str], None]


@dataclass
class StartOptions:
    harness: str | None = None
    model: str | None = None
    no_sandbox: bool = False
    yes: bool = False
    allow_unsandboxed: bool = False
    mode: Mode = "detached"


def harness_of(agent: Agent, name: str | None = None) -> Harness:
    chosen = name or agent.settings.harness or DEFAULT_HARNESS
    return Harness.find(chosen, agent.folder.harness_home(chosen))


def choose_model(agent: Agent, given: str | None) -> str:
    if given:
        return check_model(given)
    if agent.settings.model:
        return agent.settings.model
    found = default_model(agent.keys)
    if found is None:
        raise no_model(agent.name)
    return found


def model_ref(agent: Agent, model: str, sandboxed: bool, gateway: str, wired: bool = True) -> ModelRef:
    """Where the harness calls its model: the provider through the proxy, lnk's gateway, or a local
    server. A harness holding its own key (not wired) goes past the gateway, to the provider itself."""
    provider = provider_of(model)
    if provider == "local":
        url = local_server(load_machine(agent.layout))
    elif sandboxed:
        url = PROVIDERS[provider].url
    elif not wired:
        url = f"https://{PROVIDERS[provider].host}{PROVIDERS[provider].base_path}"
    else:
        url = f"{gateway}/model{PROVIDERS[provider].base_path}"
    return ModelRef(name=model, provider=provider, url=url)  # type: ignore[arg-type]


def harness_settings(
    agent: Agent,
    harness: Harness,
    *,
    model: ModelRef | None = None,
    ports: list[int] | None = None,
    key: str | None = None,
    tools: dict[str, str] | None = None,
    channels: dict[str, dict[str, object]] | None = None,
    proxied: bool | None = None,
    allowed: list[str] | None = None,
) -> Path:
    """The agent as the adapter sees it, at LNK_SETTINGS in the harness's home: never a model key or token."""
    folder = agent.folder
    settings = HarnessSettings(
        contract=CONTRACT_VERSION,
        agent=AgentRef(name=agent.name, id=agent.id, owner=agent.settings.owner),
        model=model,
        folders=AgentFolders(
            agent=str(folder.root), home=str(folder.home), chats=str(folder.chats), harness_home=str(harness.home)
        ),
        ports=ports if ports is not None else agent.settings.ports,
        endpoint_key=key,
        tools=tools or {},
        channels=channels or {},
        proxied=proxied,
        allowed=allowed or [],
        turns=_Turns.model_validate(agent.settings.turns.model_dump()),
        hops=agent.settings.hops,
        notes_max=agent.settings.instructions.max.notes,
    )
    harness.home.mkdir(parents=True, exist_ok=True)
    path = harness.home / SETTINGS_FILE
    write_atomic(path, settings.model_dump_json(indent=2))
    return path


def _writes(agent: Agent, names: list[str]) -> list[str]:
    """The adapter's `folders`, as paths in the agent's folder."""
    folder = agent.folder
    resolved = []
    for name in names:
        if name.startswith("/") or ".." in Path(name).parts:
            raise LinkError(f"The harness asks to write {name!r}, which is not a folder of the agent's.")
        resolved.append(str({"Home": folder.home, "chats": folder.chats}.get(name, folder.root / name)))
    return resolved


def _step(
    agent: Agent, harness: Harness, command: str, env: dict[str, str], sandboxed: bool, description: Description
) -> Done:
    """install or configure: in the sandbox, through a proxy reaching only the adapter's hosts.
    An adapter that doesn't answer it (its description says so) has nothing to do there."""
    if not harness.answers(command, description):
        return Done()
    if not sandboxed:
        return harness.step(command, env)
    hosts = harness.hosts(env, description)
    request = SandboxRequest(
        agent=agent.name,
        mode="setup",
        harness=harness.name,
        argv=[harness.path, command],
        env=env,
        cwd=str(harness.home),
        reads=program_reads([harness.path]),
        hosts=hosts,
    )
    done = answer_in_sandbox(agent, request, Done, f"setup-{command}") or Done()
    if not done.ok:
        raise LinkError(f"lnk-{harness.name} {command} failed: {done.detail or 'it gave no reason'}.")
    return done


def _install_once(
    agent: Agent, harness: Harness, env: dict[str, str], sandboxed: bool, description: Description, say: Say
) -> None:
    """install runs for a new home and for a new adapter program (a new release rewrites it)."""
    if not harness.answers("install", description):
        return
    path = Path(harness.path)
    stat = path.stat()
    installed = json.dumps([str(path), stat.st_size, stat.st_mtime_ns])
    marker = harness.home / INSTALLED_FILE
    if marker.exists() and marker.read_text() == installed:
        return
    say(f"Installing {harness.name} for {agent.name} (once per release)...")
    _step(agent, harness, "install", env, sandboxed, description)
    write_atomic(marker, installed, mode=0o644)


def proxy_port(block: list[int]) -> int | None:
    """Where a sandboxed harness's proxy answers, when lnk names it: on a Mac, the block's last port
    on this machine's loopback; on Linux the sandbox's own (PROXY_PORT), in the harness's network."""
    return block[-1] if sys.platform == "darwin" else None


def _forbidden(hint: str | None = None) -> LinkError:
    return LinkError(
        "This machine forbids running an agent without a sandbox (unsandboxed = false in machine.toml).", hint
    )


def _sandboxing(agent: Agent, harness: Harness, needs: Needs, options: StartOptions, say: Say) -> tuple[bool, Decision]:
    """Ask for what the harness needs beyond the defaults; whether it runs in a sandbox, and the answer."""
    decision = Decision()
    if needs.permissions or needs.risks:
        decision = ask_needs(agent, harness.name, needs, yes=options.yes, allow_unsandboxed=options.allow_unsandboxed)
    sandboxed = not options.no_sandbox and "unsandboxed" not in decision.granted
    if not sandboxed and load_machine(agent.layout).unsandboxed is False:
        raise _forbidden()
    if not sandboxed:
        why = "for this start (--no-sandbox)" if options.no_sandbox else f"as granted to {harness.name}"
        say(f"[yellow]{agent.name} runs without a sandbox {why}: it reads and writes all you can.[/yellow]")
    else:
        require(SANDBOX)
    return sandboxed, decision


def prepare(agent: Agent, options: StartOptions, say: Say) -> tuple[Agent, RunSpec]:
    if options.no_sandbox and load_machine(agent.layout).unsandboxed is False:
        raise _forbidden("Start it without --no-sandbox.")
    harness = harness_of(agent, options.harness)
    model = choose_model(agent, options.model)
    asked = agent.port
    description = harness.description(agent.layout, asked)
    ports_answer = harness.ports(asked, description)
    others = [other.settings.ports for other in all_agents(agent.layout) if other.id != agent.id]
    block = choose_block(agent.name, ports_answer.count + 1, ports_answer.default, agent.settings.ports, others)
    agent = agent.with_settings(harness=harness.name, model=model, ports=block)
    agent.save()
    check_free(agent.name, block)
    agent.folder.create()
    harness_ports, gateway_port = block[: ports_answer.count], block[-1]
    if block[0] != asked:  # where a first start (or a move) put the block: the endpoint is there
        description = harness.description(agent.layout, block[0])
    entries = {name: ChannelEntry.of(agent, name) for name in agent.settings.channels}

    question = harness.env(block[0], harness_settings(agent, harness, model=model_ref(agent, model, True, "")))
    with ThreadPoolExecutor(max_workers=4) as pool:
        needs_f = pool.submit(harness.needs, question, description)
        endpoint_f = pool.submit(harness.endpoint, block[0], description)
        channels_f = pool.submit(harness.channels, question, description)
        folders_f = pool.submit(harness.folders, block[0], description)
    endpoint: Endpoint | None = endpoint_f.result()

    sandboxed, decision = _sandboxing(agent, harness, needs_f.result(), options, say)

    secret = secrets.token_urlsafe(24)
    gateway = f"http://127.0.0.1:{gateway_port}/{secret}"
    notes_writable = not (
        sandboxed and agent.settings.memory and "instructions" in grants(agent, harness.name).files_read
    )
    memory_tool = memory.define(agent, notes_writable)
    tools = tools_for(agent.layout, agent.name)
    if sandboxed:
        urls = {tool.name: tool_url(tool.name, proxy_port(block) or PROXY_PORT) for tool in tools}
    else:
        urls = {tool.name: f"{gateway}{TOOLS_PATH}{tool.name}/mcp" for tool in tools}
    wired = keys_wired(agent.settings)
    ref = model_ref(agent, model, sandboxed, gateway, wired)
    # Not wired: the harness is handed its key at start only, never at install or configure.
    held = (
        ref
        if wired or ref.provider == "local"
        else ref.model_copy(update={"key": held_key(agent.name, agent.keys, ref.provider)})
    )
    spoken = set(channels_f.result())
    if endpoint is not None:
        bridges, sections = sorted(entries), dict[str, dict[str, object]]()
    else:
        bridges = []
        sections = {name: dict(e.section) for name, e in entries.items() if name in spoken}
        for name in sorted(set(entries) - spoken):
            say(f"[yellow]{harness.name} doesn't speak {name}: it stays connected for another harness.[/yellow]")

    def write(key: str | None) -> Path:
        return harness_settings(
            agent,
            harness,
            model=ref if key is None else held,
            ports=harness_ports,
            key=key,
            tools=urls,
            channels=sections,
            proxied=sandboxed,
            allowed=decision.risks,
        )

    env = harness.env(block[0], write(None))
    _install_once(agent, harness, env, sandboxed, description, say)
    _step(agent, harness, "configure", env, sandboxed, description)
    key = new_endpoint_key()
    env = harness.env(block[0], write(key))
    start = harness.start(env, description)
    run_env = {**start.env, **env, ENV_TOOLS: json.dumps(urls)}
    if memory_tool is not None:
        run_env[ENV_MEMORY] = urls[memory_tool.name]
    cwd = start.cwd or str(harness.home)
    request = None
    if sandboxed:
        request = SandboxRequest(
            agent=agent.name,
            mode="harness",
            harness=harness.name,
            argv=start.argv,
            env=run_env,
            cwd=cwd,
            writes=_writes(agent, folders_f.result()),
            reads=program_reads(start.argv),
            ports=harness_ports,
            model_port=loopback_port(ref.url) if ref.provider == "local" else None,
            tools=sorted(urls),
            wire_keys=wired,
            proxy_port=proxy_port(block),
        )
    spec = RunSpec(
        agent=agent.name,
        id=agent.id,
        owner=agent.settings.owner,
        harness=harness.name,
        adapter=harness.path,
        harness_home=str(harness.home),
        sandboxed=sandboxed,
        no_sandbox=options.no_sandbox,
        mode=options.mode,
        ports=block,
        gateway=gateway_port,
        secret=secret,
        provider=None if sandboxed or ref.provider == "local" or not wired else ref.provider,
        endpoint=EndpointRef(url=endpoint.url, key=key, proof=endpoint.proof, agent=endpoint.agent)
        if endpoint
        else None,
        argv=start.argv,
        env=run_env,
        cwd=cwd,
        request=request,
        tools=tools,
        tool_urls=urls,
        bridges=bridges,
        settings_file=env["LNK_SETTINGS"],
        lnk=__version__,
    )
    return agent, spec
