"""A conversation's events: each a file in `chats/<thread>/events/`, written once, by its number.

A writer claims the next number by hard-linking a finished file to it, which fails when the name
is taken: so an event is never half written, never written twice, and a writer that loses the
race to another (a message arriving while a turn writes) reads the folder again and takes the
next number. Nothing ever changes or removes an event.

An event is in the file system once `append` returns, so a crash of the harness loses nothing;
it isn't flushed to the disk on the spot (the disk gets it as it gets every write), which would
cost a message its first token.
"""

from __future__ import annotations

import errno
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from link_plugin import LinkError
from link_plugin.wire import Sender

_UNNAMED = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
"""Whether a file can be written unnamed and then named by linking it through /proc."""


def _now() -> float:
    return time.time()


class MessageIn(BaseModel):
    """A message as it arrived: kept before anything else is done with it."""

    kind: Literal["message"] = "message"
    at: float = Field(default_factory=_now)
    text: str
    sender: Sender | None = None
    """Who sent it when it isn't the owner (Link-From), and over how many hops."""
    key: str | None = None
    """Its channel's idempotency key (Link-Message-Id): a message is kept once per key."""


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
    name: int | None = None
    """The number of the message that names it (its id, `<thread>/<name>`): the one whose request
    started its turn. None in answers an older harness wrote, which are named by their own number."""


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


Identity = tuple[int, int, int, int]
"""The events folder on disk: its device and inode, and its first event's inode and time."""


class _Recent:
    """Events lately read or written, parsed, and the newest number seen in each conversation.

    An event never changes and numbers never skip, so what was read once needn't be read again,
    and what follows the newest number seen is found by its next number. A cache of what is on
    disk, never the record, bounded in events and in conversations: each keyed by its folder's
    identity on disk (its first event's included), so a conversation deleted and begun again,
    even where the file system hands out the same inode, is read anew.
    """

    def __init__(self, events: int, conversations: int) -> None:
        self._size = events
        self._conversations = conversations
        self._events: OrderedDict[tuple[Identity, int], Event] = OrderedDict()
        self._newest: OrderedDict[Identity, int] = OrderedDict()
        self._lock = threading.Lock()  # a turn settles its answer, and renders, in worker threads

    def get(self, identity: Identity, number: int) -> Event | None:
        with self._lock:
            event = self._events.get((identity, number))
            if event is not None:
                self._events.move_to_end((identity, number))
            return event

    def put(self, identity: Identity, number: int, event: Event) -> None:
        with self._lock:
            self._events[(identity, number)] = event
            self._events.move_to_end((identity, number))
            while len(self._events) > self._size:
                self._events.popitem(last=False)
            self._saw(identity, number)

    def newest(self, identity: Identity) -> int:
        """The newest number seen in the conversation; 0 when none was."""
        with self._lock:
            return self._newest.get(identity, 0)

    def saw(self, identity: Identity, number: int) -> None:
        with self._lock:
            self._saw(identity, number)

    def _saw(self, identity: Identity, number: int) -> None:
        if number > self._newest.get(identity, 0):
            self._newest[identity] = number
        self._newest.move_to_end(identity)
        while len(self._newest) > self._conversations:
            self._newest.popitem(last=False)


RECENT = _Recent(events=2048, conversations=4096)


class EventLog:
    """The events folder of one conversation."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._prefix = f"{folder}{os.sep}"
        self._identity: Identity | None = None

    def identity(self) -> Identity | None:
        """The folder on disk, or None while it holds no first event."""
        if self._identity is None:
            try:
                where = os.stat(self.folder)
                first = os.stat(self.folder / event_name(1))
            except FileNotFoundError:
                return None
            self._identity = (where.st_dev, where.st_ino, first.st_ino, first.st_mtime_ns)
        return self._identity

    def numbers(self) -> list[int]:
        """Every event's number, from the folder's listing (what a conversation's length costs)."""
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        return sorted(
            int(name[:8]) for name in names if len(name) == 13 and name.endswith(".json") and name[:8].isdigit()
        )

    def append(self, event: Event) -> int:
        """Write `event` under the next free number and return that number."""
        with self.prepare(event) as prepared:
            return prepared.name()

    def prepare(self, event: Event) -> Prepared:
        """`event` written whole but not yet named, so naming it later is one link, no more."""
        return Prepared(self, event)

    def _name(self, source: str, fd: int | None, event: Event) -> int:
        identity = self.identity()
        known = RECENT.newest(identity) if identity is not None else 0
        # The newest number this process saw is only a hint (another process may have written
        # since; the link says): without one, the listing says, once.
        number = (known or (self.numbers() or [0])[-1]) + 1
        while True:
            try:
                # A dir fd makes it linkat(..., AT_SYMLINK_FOLLOW), which names an unnamed
                # file through /proc; the kernel ignores it for an absolute path.
                os.link(source, self.folder / event_name(number), src_dir_fd=fd, follow_symlinks=True)
            except FileExistsError:
                # Another writer took the number: read again and take the next.
                number = max(number, (self.numbers() or [0])[-1]) + 1
                continue
            identity = self.identity()
            if identity is not None:
                RECENT.put(identity, number, event)
            return number

    @contextmanager
    def _written(self, data: bytes) -> Iterator[tuple[str, int | None]]:
        """A whole file holding `data`, not yet named: linking names it, in one step."""
        try:
            fd = self._unnamed()
        except FileNotFoundError:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = self._unnamed()
        if fd >= 0:
            try:
                os.write(fd, data)
                yield f"/proc/self/fd/{fd}", fd
            finally:
                os.close(fd)
            return
        tmp = self.folder / f".incoming-{secrets.token_hex(6)}"
        try:
            tmp.write_bytes(data)
            yield str(tmp), None
        finally:
            tmp.unlink(missing_ok=True)

    def _unnamed(self) -> int:
        """A file with no name in the folder (Linux's O_TMPFILE), or -1 where there's none."""
        if not _UNNAMED:
            return -1
        try:
            return os.open(self.folder, os.O_TMPFILE | os.O_WRONLY, 0o600)
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR):
                return -1  # a file system without unnamed files
            raise

    def get(self, number: int) -> Event | None:
        """Event `number`, or None when there is none (yet)."""
        identity = self.identity()
        if identity is None or number < 1:
            return None
        event = RECENT.get(identity, number)
        if event is None:
            event = self._parse(number)
            if event is not None:
                RECENT.put(identity, number, event)
        return event

    def message(self, number: int) -> MessageIn:
        """Message `number`, which an event names (an output took it, a key was kept for it)."""
        event = self.get(number)
        if not isinstance(event, MessageIn):
            raise EventError(
                f"{self.folder / event_name(number)} is not the message another event says it is.",
                "Events are written once by the harness; put back the file that was there.",
            )
        return event

    def read(self, after: int = 0) -> list[Numbered]:
        """Every event numbered above `after`, in order: found by the next number (numbers never
        skip), so reading what's new costs what's new. From the first, `every` reads them all."""
        if after <= 0:
            return list(self.every())
        events: list[Numbered] = []
        while (event := self.get(after + len(events) + 1)) is not None:
            events.append((after + len(events) + 1, event))
        return events

    def every(self) -> Iterator[Numbered]:
        """Every event, from the first, by the folder's listing (a number missing by hand is
        passed over); parsed one by one, and not kept. What rebuilds a cache of the events reads."""
        identity = self.identity()
        numbers = self.numbers()
        for number in numbers:
            event = self._parse(number)
            if event is not None:
                yield number, event
        if identity is not None and numbers:
            RECENT.saw(identity, numbers[-1])

    def _parse(self, number: int) -> Event | None:
        path = f"{self._prefix}{number:08d}.json"
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            data = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
        finally:
            os.close(fd)
        try:
            return _EVENT.validate_json(data)
        except ValidationError as exc:
            raise EventError(
                f"{path} is not an event this harness can read ({exc.errors()[0]['msg']}).",
                "Events are written once by the harness; move the file aside if something else wrote it.",
            ) from exc


class Prepared:
    """An event written whole, not yet named: `name` gives it the next free number. What isn't
    named by `close` is gone, never seen (an unnamed file, or a hidden one taken away)."""

    def __init__(self, log: EventLog, event: Event) -> None:
        self._log = log
        self._event = event
        self._stack = ExitStack()
        self._source, self._fd = self._stack.enter_context(log._written(event.model_dump_json().encode()))

    def name(self) -> int:
        return self._log._name(self._source, self._fd, self._event)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
