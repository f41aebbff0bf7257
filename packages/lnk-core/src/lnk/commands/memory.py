"""`lnk agent memory`: turn an agent's memory on with an engine, or off."""

from __future__ import annotations

from typing import Annotated

import typer

from link_plugin.errors import LinkError
from lnk import memory
from lnk.agents import DEFAULT_AGENT, Agent
from lnk.commands.agent import restart_as_before
from lnk.commands.common import AgentArg, JsonOpt, agent, emit, err, out, say
from lnk.known import DEFAULT_HARNESS
from lnk.plugins import require
from lnk.sandboxing import SANDBOX, grants
from lnk.services import running
from lnk.status import details

app = typer.Typer(
    help="The agent's memory: an engine serving its files and conversations as a tool.", no_args_is_help=True
)

EngineArg = Annotated[str, typer.Argument(help="The memory engine: link (Link Memory), or lnk-<name> on PATH.")]


def _notes_writable(found: Agent) -> bool:
    """The engine is named the notes file only where the agent's instructions are writable."""
    try:
        require(SANDBOX)
    except LinkError:
        return True
    return "instructions" not in grants(found, found.settings.harness or DEFAULT_HARNESS).files_read


def _use(engine: str, name: str) -> None:
    found = agent(name)
    with err.status(f"Installing the memory engine {engine} (once)..."):
        memory.install(found, engine)
    found = found.with_settings(memory=engine)
    tool = memory.define(found, _notes_writable(found), force=True)
    found.save()
    assert tool is not None
    say(f"[green]{name}'s memory is {engine}[/green]: the tool {tool.name}, reached at $LNK_MEMORY.")
    if running(found) is not None:
        restart_as_before(found)


@app.command()
def start(engine: EngineArg = "link", name: AgentArg = DEFAULT_AGENT) -> None:
    """Turn memory on: install the engine on first use and define the agent's memory tool."""
    _use(engine, name)


@app.command()
def use(engine: EngineArg, name: AgentArg = DEFAULT_AGENT) -> None:
    """Switch the agent's memory to another engine."""
    _use(engine, name)


@app.command()
def stop(name: AgentArg = DEFAULT_AGENT) -> None:
    """Turn memory off. What it indexed stays in the agent's Memory folder."""
    found = agent(name).with_settings(memory=None)
    found.save()
    memory.define(found, True)
    say(f"{name}'s memory is off.")
    if running(found) is not None:
        restart_as_before(found)


@app.command()
def status(name: AgentArg = DEFAULT_AGENT, as_json: JsonOpt = False) -> None:
    """The memory engine and how far it has indexed."""
    found = details(agent(name))["memory"]
    if as_json:
        emit(found)
        return
    if not found["engine"]:
        out.print("off")
        return
    out.print(f"{found['engine']} ({found['tool']})")
    if found["indexed"] is not None:
        out.print(str(found["indexed"]))
