"""conversation.md: a conversation as a person (and memory's index) reads it, rendered from its events.

Who said what, when, and which tools the agent used; tool answers stay in the events, since
they'd bury the conversation in search results.
"""

from __future__ import annotations

import time

from link_plugin.wire import Thread
from lnk_harness.events import Answer, MessageIn, Numbered, Output, Result


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def render(thread: Thread, events: list[Numbered], agent: str) -> str:
    lines = [f"# Conversation {thread}", ""]
    speaker: str | None = None

    def heading(who: str, at: float) -> None:
        nonlocal speaker
        if speaker != who:
            lines.extend([f"## {who} · {_when(at)}", ""])
            speaker = who

    for _, event in events:
        if isinstance(event, MessageIn):
            who = "Owner" if event.sender is None else f"{event.sender.who} (not the owner)"
            speaker = None  # every message gets its own heading, even two in a row
            heading(who, event.at)
            lines.extend([event.text.strip() or "(empty message)", ""])
        elif isinstance(event, Output):
            heading(agent, event.at)
            if event.text.strip():
                lines.extend([event.text.strip(), ""])
            for call in event.calls:
                lines.extend([f"_Used `{call.name}`._", ""])
            if event.stopped:
                lines.extend(["_(Stopped by a new message.)_", ""])
        elif isinstance(event, Result) and event.lost:
            heading(agent, event.at)
            lines.extend([f"_`{event.name}` did not answer before the turn stopped; it was not made again._", ""])
        elif isinstance(event, Answer) and event.error:
            heading(agent, event.at)
            lines.extend([f"_The answer stopped: {event.error}_", ""])
    return "\n".join(lines).rstrip() + "\n"
