"""The channel contract: `lnk-<channel> <command>`.

`connect` runs in the owner's terminal: prompts and the pairing code go to stderr, the one JSON
answer to stdout. Context comes through the environment: `LNK_AGENT`, `LNK_AGENT_ID`,
`LNK_CHANNEL_DIR` (the folder for a linked device's state) and `LNK_CHANNEL_TAKEN` (a JSON list
of the identities other agents here hold, which connect refuses).

`bridge` carries messages between the service and a harness endpoint until it is stopped. It
reads one `BridgeSpec` JSON line on stdin, so no token sits in its arguments or environment.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from link_plugin.answers import Answer
from link_plugin.contract import CONTRACT_COMMAND, Command
from link_plugin.harness import AgentRef, Done
from link_plugin.model import Model

ENV_AGENT = "LNK_AGENT"
ENV_AGENT_ID = "LNK_AGENT_ID"
ENV_CHANNEL_DIR = "LNK_CHANNEL_DIR"
ENV_CHANNEL_TAKEN = "LNK_CHANNEL_TAKEN"

_CONTEXT = (ENV_AGENT, ENV_AGENT_ID, ENV_CHANNEL_DIR, ENV_CHANNEL_TAKEN)


class SecretField(Model):
    name: str
    """Its key name in Link's keys, e.g. bot-token."""
    prompt: str


class Describe(Answer):
    title: str
    secrets: list[SecretField] = Field(default_factory=list)
    device: bool = False
    """Linked as a device (WhatsApp, Signal) rather than a bot token."""
    hosts: list[str] = Field(default_factory=list)
    """The hosts its bridge and connect reach."""


class Connected(Answer):
    identity: str
    """What makes the bot or app one agent's alone, e.g. telegram-bot:123456."""
    section: dict[str, Any] = Field(default_factory=dict)
    """The channel's settings section (no secrets), kept in the agent's channels map."""
    secrets: dict[str, str] = Field(default_factory=dict)
    """Secret fields by name, stored in Link's keys and handed only to the bridge."""


class EndpointRef(Model):
    url: str
    key: str
    proof: bool = True
    agent: bool = True
    tools: bool = False
    """The endpoint narrows a conversation's tools by `Link-Tools`; False from a core that doesn't say."""


class BridgeSpec(Answer):
    """What a bridge reads on stdin."""

    contract: int
    agent: AgentRef
    endpoint: EndpointRef
    section: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, str] = Field(default_factory=dict)
    folder: str | None = None
    """The channel's folder under Link's settings (`LNK_CHANNEL_DIR` at connect), which no sandbox
    reaches: a linked device's state, and what the bridge remembers across its restarts (the
    answers it showed, `link_plugin.bridge.shown`). An older core gives it only for a channel
    linked as a device; a bridge given none remembers only while it runs."""
    steered: str | None = None
    """[channel.<name>] steered: the mark put on a message that steered a running turn, if any."""
    approvals: str | None = None
    """The agent's control socket, where tool calls wait for the owner: the bridge asks each in the
    owner's chat and answers it with their reply (link_plugin.approvals). None: a core that doesn't
    say; the owner answers in the terminal then (`lnk agent approvals`)."""
    outbox: str | None = None
    """A folder of answers nobody waits for (`link_plugin.scheduler.Notice`), to show in the owner's
    direct chat or the chat each names, each removed once shown. None: a core without one."""


class ChannelState(Answer):
    paths: list[str] = Field(default_factory=list)
    """Paths of the channel's folder a move carries."""


COMMANDS: tuple[Command, ...] = (
    CONTRACT_COMMAND,
    Command("describe", Describe, "Title, secret fields, whether it is a linked device, its hosts."),
    Command("connect", Connected, "Take the token, validate it, pair the owner by a one-time code.", inputs=_CONTEXT),
    Command(
        "bridge",
        None,
        "Carry messages to a harness endpoint until stopped (BridgeSpec on stdin).",
        inputs=("stdin: BridgeSpec",),
    ),
    Command(
        "link",
        Done,
        "Link the channel as a device into LNK_CHANNEL_DIR.",
        default=lambda: Done(ok=False, detail="this channel is not linked as a device"),
        inputs=_CONTEXT,
    ),
    Command("state", ChannelState, "What of the channel's folder a move carries.", default=ChannelState),
    Command("disconnect", Done, "Forget the channel's own state for the agent.", default=Done, inputs=_CONTEXT),
)
