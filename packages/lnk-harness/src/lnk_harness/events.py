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


class _Parsed:
    """Each conversation's events as already read, parsed, from the first on.

    An event never changes and numbers never skip, so a turn reads again only the listing and
    what's new. A cache of what is on disk, never the record: a few conversations at a time, each
    keyed by its folder's identity on disk (its first event's included), so a conversation
    deleted and begun again, even where the file system hands out the same inode, is read anew.
    """

    def __init__(self, conversations: int, events: int) -> None:
        self._size = conversations
        self._events = events
        self._known: OrderedDict[Identity, list[Numbered]] = OrderedDict()
        self._lock = threading.Lock()  # a turn settles its answer in a worker thread

    def known(self, identity: Identity) -> list[Numbered]:
        with self._lock:
            events = self._known.get(identity)
            if events is None:
                return []
            self._known.move_to_end(identity)
            return events[:]

    def keep(self, identity: Identity, events: list[Numbered]) -> None:
        """`events` are the conversation's from its first: 1, 2, 3, ..."""
        with self._lock:
            self._known[identity] = events[:]
            self._known.move_to_end(identity)
            while len(self._known) > self._size or sum(map(len, self._known.values())) > self._events:
                self._known.popitem(last=False)

    def add(self, identity: Identity, number: int, event: Event) -> None:
        """An event just written, when it follows what's known."""
        with self._lock:
            events = self._known.get(identity)
            if events is not None and len(events) == number - 1:
                events.append((number, event))


PARSED = _Parsed(conversations=64, events=50_000)


class EventLog:
    """The events folder of one conversation."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._last = -1
        """The highest number this writer has seen: only a hint, the folder decides."""
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
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        found = sorted(
            int(name[:8]) for name in names if len(name) == 13 and name.endswith(".json") and name[:8].isdigit()
        )
        self._last = found[-1] if found else 0
        return found

    def append(self, event: Event) -> int:
        """Write `event` under the next free number and return that number."""
        with self.prepare(event) as prepared:
            return prepared.name()

    def prepare(self, event: Event) -> Prepared:
        """`event` written whole but not yet named, so naming it later is one link, no more."""
        return Prepared(self, event)

    def _name(self, source: str, fd: int | None, event: Event) -> int:
        number = (self._last if self._last >= 0 else (self.numbers() or [0])[-1]) + 1
        while True:
            try:
                # A dir fd makes it linkat(..., AT_SYMLINK_FOLLOW), which names an unnamed
                # file through /proc; the kernel ignores it for an absolute path.
                os.link(source, self.folder / event_name(number), src_dir_fd=fd, follow_symlinks=True)
            except FileExistsError:
                # Another writer took the number: read again and take the next.
                number = max(number, (self.numbers() or [0])[-1]) + 1
                continue
            self._last = number
            identity = self.identity()
            if identity is not None:
                PARSED.add(identity, number, event)
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

    def read(self, after: int = 0) -> list[Numbered]:
        """Every event numbered above `after`, in order."""
        identity = self.identity()
        if identity is None:
            return []
        events = PARSED.known(identity)
        if events:
            # Numbers never skip (a writer takes the next free one), so what's new follows on.
            while (event := self._parse(len(events) + 1)) is not None:
                events.append((len(events) + 1, event))
        else:
            numbers = self.numbers()
            events = [(number, event) for number in numbers if (event := self._parse(number)) is not None]
            if not numbers or numbers[-1] != len(numbers):
                return [(n, e) for n, e in events if n > after]  # a folder with a hole: not cached
        self._last = len(events)
        PARSED.keep(identity, events)
        return events[after:]

    def _parse(self, number: int) -> Event | None:
        path = self.folder / event_name(number)
        try:
            return _EVENT.validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
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
