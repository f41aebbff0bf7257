"""An agent's channels: one map, each entry as its plugin's `connect` made it and `describe` said of it.

Secrets never sit in the map: they are in the agent's key store as `<channel>/<field>` and are
handed only to the channel's bridge, on its stdin.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from link_plugin.calls import PluginProgram
from link_plugin.channel import (
    ENV_AGENT,
    ENV_AGENT_ID,
    ENV_CHANNEL_DIR,
    ENV_CHANNEL_TAKEN,
    Connected,
    Describe,
)
from link_plugin.contract import Kind
from link_plugin.errors import LinkError
from link_plugin.model import Model
from lnk.agents import Agent, all_agents
from lnk.known import CHANNELS
from lnk.plugins import plugin_for


class ChannelEntry(Model):
    model_config = ConfigDict(extra="allow")

    identity: str
    """What makes the bot or app this agent's alone (one bot per agent)."""
    title: str = ""
    section: dict[str, Any] = Field(default_factory=dict)
    secrets: list[str] = Field(default_factory=list)
    """The names of its secret fields, kept in the key store as <channel>/<field>."""
    device: bool = False
    hosts: list[str] = Field(default_factory=list)
    steered: str | None = None

    @classmethod
    def of(cls, agent: Agent, channel: str) -> ChannelEntry:
        raw = agent.settings.channels.get(channel)
        if raw is None:
            connected = ", ".join(agent.settings.channels) or "none"
            raise LinkError(f"{agent.name} has no channel {channel!r} (connected: {connected}).")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise LinkError(f"{agent.config.settings}: the channel {channel!r} can't be read: {exc}.") from exc


def secrets_of(agent: Agent, channel: str, entry: ChannelEntry) -> dict[str, str]:
    keys = agent.keys
    found = {name: keys.get(f"{channel}/{name}") for name in entry.secrets}
    return {name: value for name, value in found.items() if value is not None}


def channel_program(channel: str) -> PluginProgram:
    """The channel's plugin: Link's own installed on first use, another plugs in from PATH."""
    return PluginProgram(plugin_for(Kind.CHANNEL, channel, CHANNELS))


def taken(agent: Agent, channel: str) -> list[str]:
    """The identities of this channel other agents here hold."""
    held = []
    for other in all_agents(agent.layout):
        raw = other.settings.channels.get(channel)
        if other.id != agent.id and isinstance(raw, dict) and isinstance(raw.get("identity"), str):
            held.append(raw["identity"])
    return held


def context(agent: Agent, channel: str) -> dict[str, str]:
    folder = agent.config.channel(channel)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return {
        ENV_AGENT: agent.name,
        ENV_AGENT_ID: agent.id,
        ENV_CHANNEL_DIR: str(folder),
        ENV_CHANNEL_TAKEN: json.dumps(taken(agent, channel)),
    }


def connect(agent: Agent, channel: str, program: PluginProgram, token_stdin: bool) -> Agent:
    """Run the plugin's connect in this terminal; keep its section in settings and its secrets in keys."""
    described = program.ask_as(Describe, Kind.CHANNEL, "describe")
    others = taken(agent, channel)
    args = ["--token-stdin"] if token_stdin else []
    connected = program.ask_as(
        Connected, Kind.CHANNEL, "connect", args, env=context(agent, channel), interactive=True, timeout=None
    )
    if connected.identity in others:
        raise LinkError(
            f"Another agent here already has {connected.identity}: one {described.title or channel} per agent.",
            "Make a new one for this agent, or disconnect it from the other.",
        )
    declared = {field.name for field in described.secrets}
    undeclared = set(connected.secrets) - declared
    if undeclared:
        raise LinkError(f"{program.executable} connect answered secrets describe never named: {sorted(undeclared)}.")
    for name, value in connected.secrets.items():
        agent.keys.set(f"{channel}/{name}", value)
    entry = ChannelEntry(
        identity=connected.identity,
        title=described.title,
        section=connected.section,
        secrets=sorted(connected.secrets),
        device=described.device,
        hosts=described.hosts,
    )
    channels = {**agent.settings.channels, channel: entry.model_dump(mode="json", exclude_none=True)}
    agent = agent.with_settings(channels=channels)
    agent.save()
    return agent


def disconnect(agent: Agent, channel: str, program: PluginProgram) -> Agent:
    entry = ChannelEntry.of(agent, channel)
    program.ask(Kind.CHANNEL, "disconnect", env=context(agent, channel), interactive=True, timeout=None)
    for name in entry.secrets:
        agent.keys.delete(f"{channel}/{name}")
    agent = agent.with_settings(channels={k: v for k, v in agent.settings.channels.items() if k != channel})
    agent.save()
    return agent
