"""Link Scheduler's two meeting points with the rest of Link: what its runner is told, and notices.

The tool (`lnk-scheduler serve`) is told the owner's other agents (`ENV_AGENTS`, each a `Peer`)
and whether the harness narrows (`ENV_NARROWS`); `lnk-scheduler list --json` answers `Schedules`.
The runner (`lnk-scheduler run`) runs beside an agent's channel bridges, in the service that holds
the agent's endpoint and key. It reads a `RunnerSpec` as one JSON line on its stdin, as a bridge
reads its `BridgeSpec`, never in its arguments or environment.

An answer nobody waits for (a schedule's, another agent's, a subagent's once it reached a chat)
is a `Notice` for one channel, posted in that channel's outbox folder: a file per notice, written
whole by rename. The channel's bridge, told the folder (`BridgeSpec.outbox`), shows each in the
owner's own direct chat (`chat` None: never a group) or in the chat it names, and then removes
it, so a bridge that was down shows it once it is back.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import Field, ValidationError

from link_plugin.channel import EndpointRef
from link_plugin.harness import AgentRef
from link_plugin.model import Model

ENV_AGENTS = "LNK_SCHEDULER_AGENTS"
"""The tool's: a JSON object of the owner's other agents here, by name, to `Peer`."""
ENV_NARROWS = "LNK_SCHEDULER_NARROWS"
"""The tool's: `1` when the agent's harness narrows a conversation's tools (its endpoint says `tools`)."""


class Peer(Model):
    """Another agent of the same owner, as the tool sends it a message: into its scheduler's state."""

    id: str
    state: str


class Scheduled(Model):
    """A message kept until it is due, as the tool answers it and `lnk-scheduler list` lists it."""

    id: str
    kind: str
    at: str
    """When it is next said (ISO 8601, UTC)."""
    repeat: str | None = None
    """Its RRULE, when it repeats."""
    title: str | None = None
    text: str
    to: str | None = None
    """Who it is for, when not this agent."""
    tools: list[str] | None = None


class Schedules(Model):
    """`lnk-scheduler list --json`: the schedules, soonest first."""

    schedules: list[Scheduled] = Field(default_factory=list)


class RunnerSpec(Model):
    """What the runner reads on stdin."""

    contract: int
    agent: AgentRef
    endpoint: EndpointRef
    state: str
    """The agent's scheduler folder (`AgentFolder.scheduler`): what is due, and the outboxes."""
    channels: list[str] = Field(default_factory=list)
    """The agent's connected channels, first connected first: an answer for the owner goes to the
    first; none, and it is kept in the runner's log alone."""


class Notice(Model):
    """An answer to show in a channel."""

    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    chat: str | None = None
    """The chat it goes to; None: the owner's own direct chat."""
    text: str
    sender: str
    """Whose message it answers (`Link-From`), for the log."""


def outbox(state: Path, channel: str) -> Path:
    """The channel's outbox folder under the scheduler's state."""
    return state / "outbox" / channel


def post(folder: Path, notice: Notice) -> Path:
    """Put a notice in an outbox, whole or not at all."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{notice.id}.json"
    partial = folder / f".{notice.id}.{os.getpid()}.{secrets.token_hex(4)}.partial"
    partial.write_text(notice.model_dump_json())
    os.replace(partial, path)
    return path


def waiting(folder: Path) -> list[tuple[Path, Notice]]:
    """The notices in an outbox, oldest first; a file that doesn't read is left and skipped."""
    if not folder.is_dir():
        return []
    found: list[tuple[float, Path, Notice]] = []
    for path in folder.glob("*.json"):
        try:
            found.append((path.stat().st_mtime, path, Notice.model_validate_json(path.read_text())))
        except (OSError, ValidationError):
            continue
    return [(path, notice) for _, path, notice in sorted(found, key=lambda item: (item[0], item[1].name))]
