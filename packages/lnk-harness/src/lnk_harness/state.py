"""What a conversation's events say, kept as they come, so no turn walks every event.

A turn needs to know which messages are unanswered, which the model hasn't seen, the running
turn's text and its open tool calls, and the model's window (window.py); a message with a key
(Link-Message-Id), whether that key was kept already. Each is what the events say, and events
only ever follow one another, so each is kept by folding in the new ones:

state.json   what the events up to `through` say (`Summary`)
keys/        a file per message key, named by its hash, holding the number of the message kept under it

Both are caches of the events, never a second record, written after a turn has answered (off
the way to its first token), keys/ before state.json: they are only ever behind the events,
never ahead, so a crash at any point leaves nothing the next load doesn't fold in again. On
load, state.json is checked against the events (the folder's identity on disk, that event
`through` is there, that keys/ is there when keys were kept), then folded forward from
`through` to the newest event, found by its next number; missing, stale or corrupt, it is
rebuilt from every event, once. A key file is checked against the message it names whenever
it is read, and one that names another has the keys rebuilt.

In memory, a process keeps the state of the conversations it answers, window included, and
folds in what's new at each look (keys folded in wait there for keys/); a conversation whose
turn runs here is never let go, and the others are let go the least recently used first.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from lnk_harness.events import Answer, Asked, CallMade, Delivered, Event, EventLog, Identity, MessageIn, Output, Result
from lnk_harness.lease import replace
from lnk_harness.window import HISTORY_CHARS, Message, Window, user

log = logging.getLogger("lnk_harness.state")

STEP_BREAK = "\n\n"
"""Between the text of two steps of one answer (before and after a tool call, or a steering message)."""


class OpenCall(BaseModel):
    asked: Asked
    made: bool = False
    """A call event was written: the call may have run."""


class Summary(BaseModel):
    """What a conversation's events up to `through` say."""

    version: Literal[1] = 1
    events: Identity
    """The events folder it was made from (events.py's identity)."""
    through: int = 0
    owners: bool | None = None
    """Whose conversation: the owner's when its first message was the owner's (None: no message yet)."""
    unanswered: list[int] = Field(default_factory=list)
    unseen: list[int] = Field(default_factory=list)
    """Messages the model was never shown."""
    answer: int = 0
    """The newest answer's number (0: none yet): the running turn's events follow it."""
    delivered: bool = False
    """The newest answer is known to have gone out whole."""
    texts: list[str] = Field(default_factory=list)
    """The text of each step since the newest answer."""
    calls: list[OpenCall] = Field(default_factory=list)
    """Calls the model asked for that have no result yet."""
    keys: int = 0
    """Messages kept with a key: keys/ holds a file for each."""

    def fold(self, number: int, event: Event) -> None:
        """Event `number`, the one after `through`, is said."""
        if isinstance(event, MessageIn):
            self.unanswered.append(number)
            self.unseen.append(number)
            if self.owners is None:
                self.owners = event.sender is None
            if event.key is not None:
                self.keys += 1
        elif isinstance(event, Output):
            if event.took:
                self.unseen = [m for m in self.unseen if m not in event.took]
            if event.text:
                self.texts.append(event.text)
            self.calls += [OpenCall(asked=call) for call in event.calls]
        elif isinstance(event, CallMade):
            for call in self.calls:
                if call.asked.id == event.call:
                    call.made = True
        elif isinstance(event, Result):
            self.calls = [call for call in self.calls if call.asked.id != event.call]
        elif isinstance(event, Answer):
            self.unanswered = [m for m in self.unanswered if m not in event.messages]
            self.answer, self.delivered, self.texts = number, False, []
        elif isinstance(event, Delivered) and event.answer == self.answer:
            self.delivered = True
        self.through = number


@dataclass(frozen=True)
class History:
    """What a conversation's events say as of event `last`: read once per step, from its state
    (below), which folds in only what's new."""

    last: int = 0
    owners: bool = True
    """Whose conversation: the owner's when its first message was the owner's."""
    answer: int = 0
    """The newest answer's number (0: none yet)."""
    delivered: bool = False
    """The newest answer is known to have gone out whole."""
    waiting: tuple[int, ...] = ()
    """Messages not answered yet."""
    new: tuple[int, ...] = ()
    """Messages the model was never shown."""
    texts: tuple[str, ...] = ()
    calls: tuple[OpenCall, ...] = ()

    @classmethod
    def of(cls, summary: Summary) -> History:
        return cls(
            last=summary.through,
            owners=summary.owners is not False,
            answer=summary.answer,
            delivered=summary.delivered,
            waiting=tuple(summary.unanswered),
            new=tuple(summary.unseen),
            texts=tuple(summary.texts),
            calls=tuple(call.model_copy() for call in summary.calls),
        )

    def unseen(self, limit: int | None = None) -> list[int]:
        """Messages the model was never shown, up to `limit`."""
        return [n for n in self.new if limit is None or n <= limit]

    def unanswered(self, limit: int | None = None) -> list[int]:
        return [n for n in self.waiting if limit is None or n <= limit]

    def seen(self, message: int) -> bool:
        """Whether the model was shown message `message`."""
        return message not in self.new

    def open_calls(self) -> list[tuple[Asked, bool]]:
        """Calls the model asked for that have no result, each with whether it was started."""
        return [(call.asked, call.made) for call in self.calls]

    def turn_text(self) -> str:
        """The running (or interrupted) turn's text: its steps' since the last answer."""
        return STEP_BREAK.join(self.texts)


class Keys:
    """keys/: for each message key, the number of the message kept under it.

    A key file is written once, and checked against its message whenever it is read: one cut
    short by a crash, or changed by hand, is written again.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> str:
        # Hashed: a key may be "." or "..", and a file system may not tell "A" from "a".
        return f"{self.folder}{os.sep}{hashlib.sha256(key.encode()).hexdigest()}"

    def get(self, key: str) -> int | None:
        """The number written for `key`: None when there is none, -1 when it isn't a number."""
        try:
            fd = os.open(self._path(key), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            kept = os.read(fd, 32)
        finally:
            os.close(fd)
        return int(kept) if kept.isdigit() else -1

    def put(self, key: str, number: int) -> None:
        path, data = self._path(key), str(number).encode()
        try:
            fd = self._create(path)
        except FileExistsError:
            if self.get(key) != number:
                replace(Path(path), data)  # whole, for whoever reads it meanwhile
            return
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def _create(self, path: str) -> int:
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileNotFoundError:
            self.folder.mkdir(parents=True, exist_ok=True)
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)

    def forget(self, key: str) -> None:
        Path(self._path(key)).unlink(missing_ok=True)


@dataclass
class _State:
    """One conversation's state in this process."""

    summary: Summary | None = None
    window: Window | None = None
    saved: int = -1
    """The `through` of the state.json this process last wrote or read."""
    keys: dict[str, int] = field(default_factory=dict)
    """Keys folded in and not yet written to keys/ (that waits for state.json, after the answer)."""
    holds: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _States:
    """The states this process keeps, the least recently used let go first, never one held."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[Identity, _State] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, identity: Identity) -> _State:
        with self._lock:
            state = self._kept.get(identity)
            if state is None:
                state = self._kept[identity] = _State()
            self._kept.move_to_end(identity)
            idle = [k for k, s in self._kept.items() if s.holds == 0 and k != identity]
            for key in idle[: max(0, len(self._kept) - self._size)]:
                del self._kept[key]
            return state

    def loaded(self, identity: Identity) -> bool:
        with self._lock:
            state = self._kept.get(identity)
            return state is not None and state.window is not None

    @contextmanager
    def held(self, identity: Identity) -> Iterator[None]:
        with self._lock:
            state = self._kept.get(identity)
            if state is None:
                state = self._kept[identity] = _State()
            state.holds += 1
        try:
            yield
        finally:
            with self._lock:
                state.holds -= 1


STATES = _States(size=32)


class ConversationState:
    """A conversation's state: found in memory, loaded from state.json, or rebuilt from its events."""

    def __init__(self, folder: Path, events: EventLog) -> None:
        self.path = folder / "state.json"
        self.events = events
        self.keys = Keys(folder / "keys")

    def history(self) -> History:
        """What the events say, up to the newest one."""
        identity = self.events.identity()
        if identity is None:
            return History()
        state = STATES.of(identity)
        with state.lock:
            return History.of(self._current(state, identity))

    def loaded(self) -> bool:
        """Whether this process has the state in memory (or there is none to load yet)."""
        identity = self.events.identity()
        return identity is None or STATES.loaded(identity)

    def load(self) -> None:
        """Load it, window included: from state.json and the tail, or, once, from every event."""
        self.window(0)

    def window(self, budget: int = HISTORY_CHARS) -> list[Message]:
        """The model's window, as of the newest event."""
        identity = self.events.identity()
        if identity is None:
            return []
        state = STATES.of(identity)
        with state.lock:
            summary = self._current(state, identity)
            if state.window is None:
                state.window = Window.from_tail(self.events, summary.through)
            return state.window.messages(budget)

    def kept_under(self, key: str) -> int | None:
        """The number of the message kept under `key`, as of the newest event; None for a new key."""
        identity = self.events.identity()
        if identity is None:
            return None
        state = STATES.of(identity)
        with state.lock:
            self._current(state, identity)
            number = state.keys.get(key) or self.keys.get(key)
            if number is None:
                return None
            if self._names(number, key):
                return number
            log.warning("%s: a key file names another message; the keys are made again", self.path.parent)
            state.summary, state.window, state.keys = self._rebuild(identity), None, {}
            number = self.keys.get(key)
            if number is not None and self._names(number, key):
                return number
            self.keys.forget(key)  # rebuilt from every event, so it belongs to none
            return None

    def _names(self, number: int, key: str) -> bool:
        event = self.events.get(number) if number > 0 else None
        return isinstance(event, MessageIn) and event.key == key

    def save(self) -> None:
        """Bring state.json up to the events, when it is behind them."""
        identity = self.events.identity()
        if identity is None:
            return
        state = STATES.of(identity)
        with state.lock:
            summary = self._current(state, identity)
            if summary.through > state.saved:
                self._save(state, summary)

    def held(self) -> AbstractContextManager[None]:
        """Keep the state in memory for as long as it is held (a turn runs)."""
        identity = self.events.identity()
        return nullcontext() if identity is None else STATES.held(identity)

    # --- under the state's lock -----------------------------------------------------------

    def _current(self, state: _State, identity: Identity) -> Summary:
        summary = state.summary
        if summary is None:
            summary = state.summary = self._load(state, identity)
        while (event := self.events.get(summary.through + 1)) is not None:
            number = summary.through + 1
            if isinstance(event, MessageIn) and event.key is not None:
                state.keys[event.key] = number
            summary.fold(number, event)
            if state.window is not None:
                state.window.fold(event, self.events.message)
        return summary

    def _load(self, state: _State, identity: Identity) -> Summary:
        try:
            summary: Summary | None = Summary.model_validate_json(self.path.read_bytes())
        except (FileNotFoundError, ValidationError):
            summary = None
        if summary is not None and self._fits(summary, identity):
            state.saved = summary.through
            return summary
        summary = self._rebuild(identity)
        self._save(state, summary)
        return summary

    def _fits(self, summary: Summary, identity: Identity) -> bool:
        """Whether state.json was made from these events, as far as they go (never further)."""
        return (
            summary.events == identity
            and (summary.through == 0 or self.events.get(summary.through) is not None)
            and (summary.keys == 0 or self.keys.folder.is_dir())
        )

    def _rebuild(self, identity: Identity) -> Summary:
        summary = Summary(events=identity)
        for number, event in self.events.every():
            if isinstance(event, MessageIn) and event.key is not None:
                self.keys.put(event.key, number)
            summary.fold(number, event)
        return summary

    def _save(self, state: _State, summary: Summary) -> None:
        # The keys first: state.json never says more than keys/ holds.
        for key, number in state.keys.items():
            self.keys.put(key, number)
        state.keys.clear()
        replace(self.path, summary.model_dump_json().encode())
        state.saved = summary.through


def shown(events: EventLog, numbers: list[int]) -> list[Message]:
    """New messages as the model is shown them."""
    return [user(events.message(number)) for number in numbers]
