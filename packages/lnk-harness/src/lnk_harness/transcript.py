"""conversation.md: a conversation as a person (and memory's index) reads it, rendered from its events.

Who said what, when, and which tools the agent used; tool answers stay in the events, since
they'd bury the conversation in search results. Events only ever follow one another, so the
transcript grows by what the newest events say: `Transcript` keeps how far it got (and who
spoke last) beside it, and renders it whole only when it is missing or was changed by hand.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, ValidationError

from link_plugin.wire import Thread
from lnk_harness.events import Answer, EventLog, MessageIn, Numbered, Output, Result
from lnk_harness.lease import flocked, replace


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def header(thread: Thread) -> str:
    return f"# Conversation {thread}\n\n"


def render(events: Iterable[Numbered], agent: str, speaker: str | None = None) -> tuple[str, str | None]:
    """The transcript's text for `events`, given who spoke last before them; and who spoke last after."""
    lines: list[str] = []

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
            lines.extend(line for call in event.calls for line in (f"_Used `{call.name}`._", ""))
            if event.stopped:
                lines.extend(["_(Stopped by a new message.)_", ""])
        elif isinstance(event, Result) and event.lost:
            heading(agent, event.at)
            lines.extend([f"_`{event.name}` did not answer before the turn stopped; it was not made again._", ""])
        elif isinstance(event, Answer) and event.error:
            heading(agent, event.at)
            lines.extend([f"_The answer stopped: {event.error}_", ""])
    return "".join(f"{line}\n" for line in lines), speaker


class Rendered(BaseModel):
    """How far the transcript got: kept in its lock file, which only the renderer writes."""

    through: int
    speaker: str | None
    size: int


class Transcript:
    def __init__(self, folder: Path, thread: Thread, events: EventLog) -> None:
        self.path = folder / "conversation.md"
        self._lock = folder / "conversation.lock"
        self._thread = thread
        self._events = events

    def render(self, agent: str) -> None:
        """Bring conversation.md up to the events as they are now.

        Under a lock of its own, reading the events inside it: of two renders, the one that
        writes last read last, so the transcript never goes back to an older state.
        """
        with flocked(self._lock) as fd:
            try:
                done: Rendered | None = Rendered.model_validate_json(os.pread(fd, 4096, 0))
            except ValidationError:
                done = None
            try:
                size = os.stat(self.path).st_size
            except FileNotFoundError:
                size = -1
            grown = done is not None and size >= done.size
            done = self._grow(done, size, agent) if done is not None and grown else self._whole(agent)
            if done is not None:
                data = done.model_dump_json().encode()
                os.ftruncate(fd, 0)
                os.pwrite(fd, data, 0)

    def _grow(self, done: Rendered, size: int, agent: str) -> Rendered | None:
        new = self._events.read(after=done.through)
        if not new and size == done.size:
            return None
        text, speaker = render(new, agent, done.speaker)
        with self.path.open("r+b") as transcript:
            transcript.truncate(done.size)  # what a render that died half-way appended goes
            transcript.seek(done.size)
            transcript.write(text.encode())
        through = new[-1][0] if new else done.through
        return Rendered(through=through, speaker=speaker, size=done.size + len(text.encode()))

    def _whole(self, agent: str) -> Rendered:
        through = 0

        def every() -> Iterator[Numbered]:
            nonlocal through
            for number, event in self._events.every():
                through = number
                yield number, event

        text, speaker = render(every(), agent)
        data = (header(self._thread) + text).encode()
        replace(self.path, data)
        return Rendered(through=through, speaker=speaker, size=len(data))
