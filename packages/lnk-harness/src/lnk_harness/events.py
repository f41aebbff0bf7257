"""A conversation's events: each a file in `chats/<thread>/events/`, written once, by its number.

A writer claims the next number by hard-linking a finished file to it, which fails when the name
is taken: so an event is never half written, never written twice, and a writer that loses the
race to another (a message arriving while a turn writes) reads the folder again and takes the
next number. Nothing ever changes or removes an event.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from link_plugin import LinkError
from link_plugin.wire import Sender

_NAME = re.compile(r"^(\d{8})\.json$")


def _now() -> float:
    return time.time()


class MessageIn(BaseModel):
    """A message as it arrived: kept before anything else is done with it."""

    kind: Literal["message"] = "message"
    at: float = Field(default_factory=_now)
    text: str
    sender: Sender | None = None
    """Who sent it when it isn't the owner (Link-From), and over how many hops."""


class Asked(BaseModel):
    """A tool call as the model asked for it."""

    id: str
    name: str
    arguments: str
    """The arguments as the model wrote them (JSON text, parsed only when the call is made)."""


class Output(BaseModel):
    """What the model said in one step of a turn: text, tool calls, or both."""

    kind: Literal["output"] = "output"
    at: float = Field(default_factory=_now)
    turn: str
    took: list[int] = Field(default_factory=list)
    """Messages the model was shown for the first time in this step."""
    text: str = ""
    calls: list[Asked] = Field(default_factory=list)
    stopped: bool = False
    """Cut short: a new message stopped the turn ([turns] busy = stop)."""


class CallMade(BaseModel):
    """A tool call about to be made: a call with this event and no result may have run."""

    kind: Literal["call"] = "call"
    at: float = Field(default_factory=_now)
    turn: str
    call: str
    name: str


class Result(BaseModel):
    kind: Literal["result"] = "result"
    at: float = Field(default_factory=_now)
    turn: str
    call: str
    name: str
    content: str
    lost: bool = False
    """Answered for a call the turn never saw answer: it was not made again."""


class Answer(BaseModel):
    """A turn's finished answer to the messages it took."""

    kind: Literal["answer"] = "answer"
    at: float = Field(default_factory=_now)
    turn: str
    messages: list[int]
    text: str
    waited: bool
    """A request was waiting for it; when False it goes to /_link/recover."""
    error: str | None = None
    stopped: bool = False


class Delivered(BaseModel):
    kind: Literal["delivered"] = "delivered"
    at: float = Field(default_factory=_now)
    answer: int
    via: Literal["request", "recover"]


Event = Annotated[MessageIn | Output | CallMade | Result | Answer | Delivered, Field(discriminator="kind")]
_EVENT: TypeAdapter[Event] = TypeAdapter(Event)

Numbered = tuple[int, Event]


class EventError(LinkError):
    """An event file that can't be read as one."""


def event_name(number: int) -> str:
    return f"{number:08d}.json"


class EventLog:
    """The events folder of one conversation."""

    def __init__(self, folder: Path, *, sync: bool = True) -> None:
        self.folder = folder
        self._sync = sync
        self._last = -1
        """The highest number this writer has seen: only a hint, the folder decides."""

    def numbers(self) -> list[int]:
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        found = sorted(int(m.group(1)) for m in map(_NAME.match, names) if m)
        self._last = found[-1] if found else 0
        return found

    def append(self, event: Event) -> int:
        """Write `event` under the next free number and return that number."""
        self.folder.mkdir(parents=True, exist_ok=True)
        data = event.model_dump_json(exclude_defaults=False).encode()
        tmp = self.folder / f".incoming-{secrets.token_hex(6)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
            if self._sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        try:
            number = (self._last if self._last >= 0 else (self.numbers() or [0])[-1]) + 1
            while True:
                try:
                    os.link(tmp, self.folder / event_name(number))
                except FileExistsError:
                    # Another writer took the number: read again and take the next.
                    number = max(number, (self.numbers() or [0])[-1]) + 1
                    continue
                self._last = number
                return number
        finally:
            tmp.unlink(missing_ok=True)

    def read(self, after: int = 0) -> list[Numbered]:
        """Every event numbered above `after`, in order."""
        events: list[Numbered] = []
        for number in self.numbers():
            if number <= after:
                continue
            path = self.folder / event_name(number)
            try:
                events.append((number, _EVENT.validate_json(path.read_bytes())))
            except ValidationError as exc:
                raise EventError(
                    f"{path} is not an event this harness can read ({exc.errors()[0]['msg']}).",
                    "Events are written once by the harness; move the file aside if something else wrote it.",
                ) from exc
        return events
