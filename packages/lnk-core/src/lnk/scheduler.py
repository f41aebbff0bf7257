"""Link Scheduler for an agent: its tool `scheduler-<agent id>`, its runner, and its schedules.

The tool (`lnk-scheduler serve`) is defined at each start, like memory, for an agent whose harness
has an endpoint (the runner says what is due there): it runs in a sandbox of its own, writing only
the agent's `Scheduler/` folder and those of the owner's other agents (a message to one is put
there). The runner (`lnk-scheduler run`) is kept beside the agent's bridges, in the service that
holds the endpoint and its key, told everything on its stdin. `lnk agent schedules` asks the
program what is scheduled; lnk reads none of its files itself.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from link_plugin.channel import EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.errors import LinkError
from link_plugin.harness import AgentRef, Endpoint
from link_plugin.memory import ENV_AGENT_ID
from link_plugin.scheduler import ENV_AGENTS, ENV_NARROWS, Peer, RunnerSpec, Schedules
from lnk.agents import Agent, load_agent, owners_others
from lnk.plugins import find, require
from lnk.sandboxing import program_reads
from lnk.tooldefs import ToolDef, remove_tool, save_tool

if TYPE_CHECKING:  # the runner's keeping is the supervisor's: `lnk agent` commands never import it
    from asyncio.subprocess import Process

    from lnk.keeper import Kept

EXECUTABLE = "lnk-scheduler"
CALLS = ["start_subagent", "schedule", "schedules", "cancel", "message_agent"]
"""Every call of the tool, none of which asks the owner first: each only says a message to the
owner's own agents here, which ask for their own tool calls as ever; nothing leaves the machine."""
ASK_TIMEOUT = 30.0


def tool_name(agent: Agent) -> str:
    return f"scheduler-{agent.id}"


def define(agent: Agent, endpoint: Endpoint | None, say: Callable[[str], None]) -> ToolDef | None:
    """The agent's scheduler tool, for a harness with an endpoint; None (and none defined) without
    one, or when Link Scheduler can't be installed (the agent runs, without schedules)."""
    if endpoint is None:
        remove_tool(agent.layout, tool_name(agent))
        return None
    try:
        program = require(EXECUTABLE)
    except LinkError as exc:
        say(f"[yellow]Link Scheduler can't be installed, so {agent.name} has no schedules: {exc.message}[/yellow]")
        remove_tool(agent.layout, tool_name(agent))
        return None
    others = owners_others(agent)
    folders = [agent.folder.scheduler, *(other.folder.scheduler for other in others)]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    peers = {other.name: Peer(id=other.id, state=str(other.folder.scheduler)).model_dump() for other in others}
    env = {ENV_AGENT_ID: agent.id, ENV_AGENTS: json.dumps(peers), ENV_NARROWS: "1" if endpoint.tools else "0"}
    if "TZ" in os.environ:
        env["TZ"] = os.environ["TZ"]  # "at 9:00" is the owner's 9:00
    tool = ToolDef(
        name=tool_name(agent),
        argv=[program, "serve", "--state", str(agent.folder.scheduler)],
        env=env,
        no_ask=CALLS,
        agents=[agent.name],
        sandboxed=True,
        reads=program_reads([program]),
        writes=[str(folder) for folder in folders],
        lists=[program, "tools"],  # the same for every agent: no new agent starts the server to list
    )
    save_tool(agent.layout, tool)
    return tool


# --- the runner ------------------------------------------------------------------------------


def runner_log(agent: Agent) -> Path:
    """The agent's log, beside its harness's: `lnk agent logs` shows an answer that reached no chat."""
    return agent.logs / "agent.log"


def runner_spec(agent: Agent, endpoint: EndpointRef) -> RunnerSpec:
    """What the runner is told at its start, from the agent as it is saved now (its channels in the
    order they were connected: the first is where the owner's answers go)."""
    agent = load_agent(agent.layout, agent.name)
    return RunnerSpec(
        contract=CONTRACT_VERSION,
        agent=AgentRef(name=agent.name, id=agent.id, owner=agent.settings.owner),
        endpoint=endpoint,
        state=str(agent.folder.scheduler),
        channels=list(agent.settings.channels),
    )


async def spawn_runner(agent: Agent, endpoint: EndpointRef) -> Process:
    from lnk.children import spawn_told

    return await spawn_told([require(EXECUTABLE), "run"], runner_log(agent), runner_spec(agent, endpoint))


def kept_runner(agent: Agent, endpoint: EndpointRef) -> Kept:
    """The runner, for its keeper: it need not start for the agent to run."""
    from lnk.children import alive
    from lnk.keeper import Kept

    return Kept(
        name="scheduler",
        spawn=lambda: spawn_runner(agent, endpoint),
        ready=alive,
        log=runner_log(agent),
        must_start=False,
    )


# --- what is scheduled -------------------------------------------------------------------------


def _ask(agent: Agent, *args: str) -> subprocess.CompletedProcess[str]:
    program = find(EXECUTABLE)
    if program is None:
        raise LinkError("Link Scheduler is not installed here.", f"`lnk agent start {agent.name}` installs it.")
    return subprocess.run(
        [program, *args, "--state", str(agent.folder.scheduler)],
        capture_output=True,
        text=True,
        timeout=ASK_TIMEOUT,
        check=False,
    )


def schedules(agent: Agent) -> Schedules:
    """The agent's schedules, soonest first; none for an agent that never had any."""
    if not agent.folder.scheduler.is_dir():
        return Schedules()
    done = _ask(agent, "list", "--json")
    if done.returncode != 0:
        raise LinkError(f"lnk-scheduler couldn't list {agent.name}'s schedules: {done.stderr.strip()[-300:]}")
    return Schedules.model_validate_json(done.stdout)


def cancel(agent: Agent, ident: str) -> None:
    done = _ask(agent, "cancel", ident)
    if done.returncode != 0:
        raise LinkError(
            f"{agent.name} has no schedule {ident!r}.", f"`lnk agent schedules {agent.name}` lists them with their ids."
        )
