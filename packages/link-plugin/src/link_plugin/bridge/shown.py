"""The answers a bridge showed, by their stable id, remembered on disk so none is shown twice.

An endpoint that says an answer's id (`Link-Answer-Id`, in the head of its stream) lists the
answer by that same id in `/_link/recover` if it never learnt it was delivered: killed the moment
the bridge read the answer's end, say. And a message sent again with its key (the connection
broke before any answer came) gets the answer of the turn that answered it, by the same id. The
bridge notes an id here once the channel took the answer's final text, before anything confirms
it, so an answer it showed is confirmed and not shown again, after a restart of either side too.

The record is one JSON file in the channel's folder (`BridgeSpec.folder`, under Link's settings,
which no sandbox reaches), written whole by rename, holding the last `KEEP` ids. One that can't
be read is said so and started afresh. Without a folder (a core that gives none) the record lasts
as long as the bridge runs.

Two ways can bring the same answer at once (recovery, and the answer streamed again for its
message): whichever claims it first shows it, and the other waits, then leaves it if it was shown.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from link_plugin.files import write_atomic
from link_plugin.model import Model

KEEP = 4096
"""Answer ids remembered: far more than can come back from one restart of the harness."""
FILE = "bridge-shown.json"
"""The record's name in the channel's folder."""


class Record(Model):
    shown: list[str] = []
    """Ids of answers shown, oldest first."""


class ShownAnswers:
    def __init__(self, path: Path | None, log: Callable[[str], None], *, keep: int = KEEP) -> None:
        self._path = path
        self._log = log
        self._order: deque[str] = deque(maxlen=keep)
        self._ids: set[str] = set()
        self._claims: dict[str, asyncio.Event] = {}
        self._writing = asyncio.Lock()
        for answer in self._read().shown[-keep:]:
            self._remember(answer)

    @classmethod
    def in_folder(cls, folder: str | None, log: Callable[[str], None]) -> ShownAnswers:
        """The record in a channel's folder; in memory only when there is none."""
        return cls(Path(folder) / FILE if folder else None, log)

    def __contains__(self, answer: object) -> bool:
        return answer in self._ids

    async def claim(self, answer: str) -> bool:
        """Whether `answer` is the caller's to show: not shown yet. While another shows it, waits to
        see whether it was. A claim ends with `add` (it was shown) or `release` (it wasn't)."""
        while (showing := self._claims.get(answer)) is not None:
            await showing.wait()
        if answer in self._ids:
            return False
        self._claims[answer] = asyncio.Event()
        return True

    def release(self, answer: str) -> None:
        """End a claim (a no-op when there is none): anyone waiting on it goes on."""
        waiting = self._claims.pop(answer, None)
        if waiting is not None:
            waiting.set()

    async def add(self, answer: str) -> None:
        """The channel took the answer's final text: remember it, on disk before this returns, and
        end its claim. A record that can't be written is said so; the id is remembered in memory."""
        self._remember(answer)
        self.release(answer)
        if self._path is None:
            return
        async with self._writing:
            data = Record(shown=list(self._order)).model_dump_json()
            try:
                await asyncio.to_thread(write_atomic, self._path, data)
            except OSError as exc:
                self._log(f"the record of answers shown, {self._path}, can't be written ({exc}); kept in memory")

    def _remember(self, answer: str) -> None:
        if answer in self._ids:
            return
        if len(self._order) == self._order.maxlen:
            self._ids.discard(self._order[0])
        self._order.append(answer)
        self._ids.add(answer)

    def _read(self) -> Record:
        if self._path is None:
            return Record()
        try:
            return Record.model_validate_json(self._path.read_bytes())
        except FileNotFoundError:
            return Record()
        except (OSError, ValidationError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "it isn't a list of answer ids"
            self._log(f"the record of answers shown, {self._path}, can't be read ({reason}); starting afresh")
            return Record()
