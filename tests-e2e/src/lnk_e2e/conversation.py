"""A conversation as Link Harness keeps it on disk (`chats/<thread>/` in the agent's folder), read as
the owner could read it: every event written once under its number in `events/`, and `outbox/`,
the answers waiting for the bridge to say it delivered them.

The suite reads it to tell what the harness did with each message (kept it, answered it, and how
the answer went out), never to decide what the harness should do.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

EVENT_NAME = 13
"""`00000001.json`: eight digits and the suffix."""


def is_event(name: str) -> bool:
    return len(name) == EVENT_NAME and name.endswith(".json") and name[:8].isdigit()


class Conversation:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.events_folder = folder / "events"
        self._read: dict[int, dict[str, Any]] = {}
        """Events already read: an event never changes once named."""

    def events(self) -> dict[int, dict[str, Any]]:
        """Every event, by number."""
        for name in os.listdir(self.events_folder):
            if is_event(name) and int(name[:8]) not in self._read:
                self._read[int(name[:8])] = json.loads((self.events_folder / name).read_bytes())
        return dict(sorted(self._read.items()))

    def kept(self, text: str) -> list[int]:
        """The numbers of the message events holding `text`."""
        return [n for n, e in self.events().items() if e["kind"] == "message" and e["text"] == text]

    def answers(self, message: int) -> list[tuple[int, dict[str, Any]]]:
        """The answer events answering message `message`, with their numbers."""
        return [(n, e) for n, e in self.events().items() if e["kind"] == "answer" and message in e["messages"]]

    def deliveries(self, answer: int) -> list[str]:
        """How answer `answer` was written down as delivered: "request", "recover", once each time."""
        return [e["via"] for e in self.events().values() if e["kind"] == "delivered" and e["answer"] == answer]

    def waiting(self, answer: int) -> bool:
        """Whether answer `answer` waits in the outbox, under the name its id carries: the message
        that started its turn."""
        event = self.events()[answer]
        name = event["name"] if event.get("name") is not None else answer
        return f"{name}.json" in self.outbox()

    def outbox(self) -> list[str]:
        """The answers waiting for the bridge to confirm them."""
        folder = self.folder / "outbox"
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def since(self, message: int) -> str:
        """What happened from message `message` on, for a failure to say: each event's number and
        kind (with its turn, and what it answers or confirms), the lease of a turn that runs, and the
        outbox."""
        lines = []
        for number, event in self.events().items():
            if number >= message:
                about = {k: event[k] for k in ("turn", "messages", "answer", "via", "name", "call") if k in event}
                lines.append(f"  {number}: {event['kind']} {json.dumps(about)}")
        lease = self.folder / "turn.json"
        lines.append(f"  lease: {lease.read_text() if lease.exists() else 'none'}")
        lines.append(f"  outbox: {self.outbox()}")
        return "\n".join(lines)
