"""What is due, kept in the agent's state folder: one file per message, written whole by rename.

    <state>/due/<id>.json     a message waiting for its time (a schedule keeps its file between times)
    <state>/routes.json       where each running subagent's answer goes: its parent conversation
    <state>/lock              held (flock) by whoever changes what is due: the tool or the runner

The tool and the runner are two processes (the tool's session, the bridge service), so every change
is made under the lock and every file is written to a temporary name and renamed: a reader sees a
message whole or not at all, and a restart finds everything where it was.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import string
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from link_plugin.scheduler import Scheduled
from lnk_scheduler.rules import next_time

Kind = Literal["schedule", "subagent", "agent", "answer"]
"""`answer`: a subagent's answer, said to its parent conversation."""
_ID_CHARS = string.ascii_lowercase + string.digits
ID_LENGTH = 10


def new_id() -> str:
    return "".join(secrets.choice(_ID_CHARS) for _ in range(ID_LENGTH))


class Due(BaseModel):
    """One message waiting for its time."""

    id: str = Field(pattern=r"^[a-z0-9]{1,32}$")
    kind: Kind
    text: str = Field(min_length=1)
    sender: str = Field(min_length=1, max_length=200)
    """Who says it (`Link-From`): `schedule:<id>`, `subagent:<parent thread>`, `agent:<id>`."""
    thread: str
    """The conversation it is said in (`Link-Thread`)."""
    hops: int = Field(default=1, ge=0)
    tools: list[str] | None = None
    """A subagent's tools (`Link-Tools`); None: every tool its conversation would have."""
    reply_to: str | None = None
    """Where its answer goes as a message (a subagent's parent conversation); None: the owner's chat."""
    at: datetime
    """When it is next due (UTC)."""
    start: datetime
    """When its rule repeats from."""
    rule: str | None = None
    """An RRULE; None: once."""
    title: str | None = None
    """What the owner calls it, for lists."""
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def scheduled(self, to: str | None = None) -> Scheduled:
        """As the tool answers it and `list` lists it."""
        return Scheduled(
            id=self.id,
            kind=self.kind,
            at=self.at.isoformat(),
            repeat=self.rule,
            title=self.title,
            text=self.text,
            to=to,
            tools=self.tools,
        )

    @property
    def occurrence(self) -> str:
        """This time's key: said again after a crash, the harness keeps it once (`Link-Message-Id`)."""
        return f"{self.kind}-{self.id}-{int(self.at.timestamp())}"


class Store:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.due_folder = folder / "due"

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.due_folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / "lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _path(self, ident: str) -> Path:
        return self.due_folder / f"{ident}.json"

    def _write(self, due: Due) -> None:
        path = self._path(due.id)
        partial = path.with_name(f".{due.id}.{os.getpid()}.partial")
        partial.write_text(due.model_dump_json(indent=1))
        os.replace(partial, path)

    def add(self, due: Due) -> Due:
        with self.locked():
            self._write(due)
        return due

    def all(self) -> list[Due]:
        """Everything waiting, soonest first. A file that doesn't read is left where it is and skipped."""
        if not self.due_folder.is_dir():
            return []
        found: list[Due] = []
        for path in self.due_folder.glob("*.json"):
            try:
                found.append(Due.model_validate_json(path.read_text()))
            except (OSError, ValidationError):
                continue
        return sorted(found, key=lambda due: (due.at, due.id))

    def get(self, ident: str) -> Due | None:
        try:
            return Due.model_validate_json(self._path(ident).read_text())
        except (OSError, ValidationError):
            return None

    def cancel(self, ident: str, kinds: tuple[Kind, ...] = ("schedule",)) -> Due | None:
        """Take a message away before its time; None when there is none by that id."""
        with self.locked():
            due = self.get(ident)
            if due is None or due.kind not in kinds:
                return None
            self._path(ident).unlink(missing_ok=True)
            return due

    def due(self, now: datetime) -> list[Due]:
        return [due for due in self.all() if due.at <= now]

    def said(self, said: Due, now: datetime) -> Due | None:
        """`said` was said: its next time after `now` (a missed run is said once, not once per
        occurrence), or it goes. None when it is gone; a message changed meanwhile is left as it is."""
        with self.locked():
            current = self.get(said.id)
            if current is None or current.at != said.at:
                return current
            following = next_time(current.rule, current.start, max(now, current.at))
            if following is None:
                self._path(current.id).unlink(missing_ok=True)
                return None
            moved = current.model_copy(update={"at": following})
            self._write(moved)
            return moved

    def _routes(self) -> dict[str, str]:
        try:
            loaded = json.loads((self.folder / "routes.json").read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}

    def _write_routes(self, routes: dict[str, str]) -> None:
        path = self.folder / "routes.json"
        partial = path.with_name(f".routes.{os.getpid()}.partial")
        partial.write_text(json.dumps(routes, indent=1, sort_keys=True))
        os.replace(partial, path)

    def route(self, thread: str, parent: str) -> None:
        """`thread` (a subagent's) answers up to `parent`."""
        with self.locked():
            routes = self._routes()
            routes[thread] = parent
            self._write_routes(routes)

    def parent(self, thread: str, *, take: bool = False) -> str | None:
        """Where `thread`'s answer goes up to, if it is a subagent's; `take`: and forget it."""
        with self.locked():
            routes = self._routes()
            found = routes.pop(thread, None) if take else routes.get(thread)
            if take and found is not None:
                self._write_routes(routes)
            return found
