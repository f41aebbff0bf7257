"""Running a channel's bridge: the program `lnk-<channel> bridge`, told everything on its stdin.

A bridge carries messages between a chat service and the harness's endpoint. The supervisor
starts one per connected channel once the harness answers, and hands it a BridgeSpec as one line
of JSON on its stdin, never in its arguments or environment: the agent, the endpoint and its key,
the channel's section of the settings, its secrets (a bot's token) and the control socket, where
the bridge asks the owner about a tool call. The agent is read again at each start, so a bridge
started again after `lnk agent connect` changed a token runs with the new one.

A bridge says nothing of itself: it is ready while its process runs, and one that ends is
started again (see keeper). Its output goes to `bridge-<channel>.log` in the agent's logs.
"""

from __future__ import annotations

from asyncio.subprocess import Process
from pathlib import Path

from link_plugin.channel import BridgeSpec, EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.harness import AgentRef
from link_plugin.scheduler import outbox
from lnk.agents import Agent, load_agent
from lnk.channels import ChannelEntry, secrets_of
from lnk.children import alive, spawn_told
from lnk.keeper import Kept
from lnk.known import channel_executable
from lnk.plugins import require


def bridge_log(agent: Agent, channel: str) -> Path:
    return agent.logs / f"bridge-{channel}.log"


def bridge_spec(agent: Agent, endpoint: EndpointRef, channel: str) -> BridgeSpec:
    """What the bridge is told at its start, from the agent as it is saved now."""
    agent = load_agent(agent.layout, agent.name)
    entry = ChannelEntry.of(agent, channel)
    return BridgeSpec(
        contract=CONTRACT_VERSION,
        agent=AgentRef(name=agent.name, id=agent.id, owner=agent.settings.owner),
        endpoint=endpoint,
        section=entry.section,
        secrets=secrets_of(agent, channel, entry),
        folder=str(agent.config.channel(channel)),
        steered=entry.steered,
        approvals=str(agent.run.control),
        outbox=str(outbox(agent.folder.scheduler, channel)),
    )


async def spawn_bridge(agent: Agent, endpoint: EndpointRef, channel: str) -> Process:
    argv = [require(channel_executable(channel)), "bridge"]
    return await spawn_told(argv, bridge_log(agent, channel), bridge_spec(agent, endpoint, channel))


def kept_bridge(agent: Agent, endpoint: EndpointRef, channel: str) -> Kept:
    """A channel's bridge, for its keeper: it need not start for the agent to run."""
    return Kept(
        name=f"bridge:{channel}",
        spawn=lambda: spawn_bridge(agent, endpoint, channel),
        ready=alive,
        log=bridge_log(agent, channel),
        must_start=False,
    )
