"""The agent's memory: an engine's session, defined as the agent's own tool `memory-<agent id>`.

The engine answers `command <folder> <state>`; that command, run in a sandbox of its own, is the
tool the harness reaches at $LNK_MEMORY. It is defined again at a start when what it was defined
from changed (the settings, the engine or lnk) or the tool is gone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.errors import ContractError, LinkError
from link_plugin.harness import Done
from link_plugin.memory import (
    ENV_AGENT_ID,
    ENV_EMBEDDINGS,
    ENV_MODEL_SERVER,
    ENV_NOTES,
    ENV_NOTES_MAX,
    ENV_OWNER,
    MemoryCommand,
)
from lnk import __version__
from lnk.agents import Agent, owners_others
from lnk.harnesses import clean_env
from lnk.known import MEMORIES
from lnk.machine import load_machine
from lnk.models import configured_server, loopback_port
from lnk.plugins import plugin_for
from lnk.sandboxing import program_reads
from lnk.tooldefs import ToolDef, find_tool, remove_tool, save_tool


def tool_name(agent: Agent) -> str:
    return f"memory-{agent.id}"


def engine_program(agent: Agent, engine: str) -> PluginProgram:
    path = plugin_for(Kind.MEMORY, engine, MEMORIES)
    state = agent.folder.memory_state(engine)
    state.mkdir(parents=True, exist_ok=True)
    return PluginProgram(path, env=clean_env(state), timeout=120.0)


def install(agent: Agent, engine: str) -> Done:
    done = engine_program(agent, engine).ask_as(Done, Kind.MEMORY, "install", timeout=1800.0)
    if not done.ok:
        raise LinkError(f"Installing the memory engine {engine} failed: {done.detail or 'it gave no reason'}.")
    return done


def _context(agent: Agent, notes_writable: bool) -> dict[str, str]:
    env = {ENV_AGENT_ID: agent.id, ENV_OWNER: agent.settings.owner}
    if notes_writable:
        env[ENV_NOTES] = str(agent.folder.notes)
        env[ENV_NOTES_MAX] = str(agent.settings.tool.memory.notes)
    if agent.settings.embeddings:
        env[ENV_EMBEDDINGS] = agent.settings.embeddings
    server = configured_server(load_machine(agent.layout))
    if server:
        env[ENV_MODEL_SERVER] = server
    return env


def _stamp(agent: Agent, engine: str, program: PluginProgram, context: dict[str, str]) -> str:
    """What the tool is defined from: the agent's settings for it, the engine's program, lnk's. The
    program stands for the engine's release (a new release rewrites it), so no start asks the engine
    which release it is."""
    path = Path(program.path or program.executable).resolve()
    stat = path.stat()
    seen = {
        "engine": engine,
        "program": [str(path), stat.st_size, stat.st_mtime_ns],
        "lnk": __version__,
        "context": context,
        "notes_max": agent.settings.tool.memory.notes,
        "folders": [str(other.folder.root) for other in [agent, *owners_others(agent)]],
    }
    return hashlib.sha256(json.dumps(seen, sort_keys=True).encode()).hexdigest()


def _writes_notes(other: Agent) -> bool:
    """Whether another agent's own memory tool may write its notes (its instructions are writable)."""
    existing = find_tool(other.layout, tool_name(other))
    return existing is not None and str(other.folder.memory) in existing.writes


def define(agent: Agent, notes_writable: bool, force: bool = False) -> ToolDef | None:
    """The agent's memory tool, asked of its engine again only when what it was defined from changed."""
    engine = agent.settings.memory
    if not engine:
        remove_tool(agent.layout, tool_name(agent))
        return None
    program = engine_program(agent, engine)
    context = _context(agent, notes_writable)
    stamp = _stamp(agent, engine, program, context)
    existing = find_tool(agent.layout, tool_name(agent))
    if existing is not None and existing.stamp == stamp and not force:
        return existing
    state = agent.folder.memory_state(engine)
    answer = program.ask_as(MemoryCommand, Kind.MEMORY, "command", [str(agent.folder.root), str(state)], env=context)
    if answer.notes is not None and answer.notes != context.get(ENV_NOTES):
        raise ContractError(
            f"lnk-{engine} command claims the notes file {answer.notes}, which Link didn't name.",
            "An engine writes only the notes file LNK_NOTES names, and none when it names none.",
        )
    # The first session of an owner starts the owner's one engine, in this sandbox: so it holds
    # every folder of the owner's agents (never another owner's), each read, its state written.
    owners = [agent, *owners_others(agent)]
    reads = [str(path) for other in owners for path in (other.folder.home, other.folder.chats)]
    writes = [str(other.folder.memory_state(engine)) for other in owners]
    writes += [str(other.folder.memory) for other in owners[1:] if _writes_notes(other)]
    tool = ToolDef(
        name=tool_name(agent),
        argv=answer.argv,
        env=answer.env,
        no_ask=answer.no_ask,
        agents=[agent.name],
        sandboxed=True,
        reads=[*reads, *program_reads([program.path or program.executable, *answer.argv])],
        writes=[*writes, *answer.writes],
        model_port=loopback_port(context[ENV_MODEL_SERVER]) if ENV_MODEL_SERVER in context else None,
        stamp=stamp,
    )
    save_tool(agent.layout, tool)
    return tool
