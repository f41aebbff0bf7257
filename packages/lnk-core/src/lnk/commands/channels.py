"""`lnk agent connect` / `disconnect`: a channel's plugin pairs it in this terminal; Link keeps the rest."""

from __future__ import annotations

from typing import Annotated

import typer

from link_plugin.errors import LinkError
from lnk import channels
from lnk.agents import DEFAULT_AGENT
from lnk.commands.agent import paused
from lnk.commands.common import AgentArg, agent, say
from lnk.harness_settings import harness_settings
from lnk.harnesses import harness_of

ChannelArg = Annotated[
    str, typer.Argument(help="The channel: telegram, slack, discord, whatsapp, signal, or lnk-<name> on PATH.")
]


def connect(
    channel: ChannelArg,
    name: AgentArg = DEFAULT_AGENT,
    token_stdin: Annotated[bool, typer.Option("--token-stdin", help="Give the plugin its secret on stdin.")] = False,
) -> None:
    """Connect a channel: its plugin takes the token and pairs you by a one-time code."""
    found = agent(name)
    program = channels.channel_program(channel)
    harness = harness_of(found)
    port = found.port
    described = harness.description(found.layout, port)
    spoken = harness.channels(harness.env(port, harness_settings(found, harness)), described)
    if harness.endpoint(port, described) is None and channel not in spoken:
        raise LinkError(
            f"{name}'s harness ({harness.name}) can't speak {channel} (it speaks: {', '.join(spoken) or 'none'}).",
            f"`lnk agent use link {name}` switches to Link Harness, which speaks every channel Link carries.",
        )
    with paused(found, f"Stopping {name} while {channel} pairs, so only one program reads its messages."):
        found = channels.connect(found, channel, program, token_stdin)
        say(f"[green]{channel} is connected to {name}[/green] ({channels.ChannelEntry.of(found, channel).identity}).")


def disconnect(channel: ChannelArg, name: AgentArg = DEFAULT_AGENT) -> None:
    """Disconnect a channel: its plugin forgets its state, Link its section and secrets."""
    found = agent(name)
    channels.ChannelEntry.of(found, channel)
    program = channels.channel_program(channel)
    with paused(found):
        channels.disconnect(found, channel, program)
        say(f"{channel} is disconnected from {name}.")
