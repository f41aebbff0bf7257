"""What a turn hands the request waiting for it: the answer's text as it is written, then its end.

The turn runs apart from the request, so a request that goes away never stops the answer; the
request says back whether the whole answer went out, and an answer that didn't is kept for
`/_link/recover`. Every answer has its id from the start (`Link-Answer-Id`), the one recovery
would list it by. A message that joined a running turn gets `Joined`: that turn's answer id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from link_plugin.waits import within

log = logging.getLogger("lnk_harness.reply")


@dataclass(frozen=True)
class End:
    error: str | None = None
    stopped: bool = False


@dataclass(frozen=True)
class Joined:
    """The message joined a running turn (it steered, or that turn answered it): its answer comes
    on the request that started the turn, or by recovery."""

    answer_id: str | None
    """The answer's id, when the turn's lease names it (an older harness's doesn't)."""


class Reply:
    def __init__(self, answer_id: str) -> None:
        self.answer_id = answer_id
        self._queue: asyncio.Queue[str | End] = asyncio.Queue()
        self._settled: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._record: Callable[[bool], None] | None = None

    def put(self, text: str) -> None:
        self._queue.put_nowait(text)

    def end(self, end: End, record: Callable[[bool], None] | None = None) -> None:
        """The answer is whole. `record(delivered)` writes down whether it went out: the request
        calls it the moment the last bytes did, so a crash after finds it delivered, not owed."""
        self._record = record
        self._queue.put_nowait(end)

    async def next(self) -> str | End:
        return await self._queue.get()

    def settle(self, delivered: bool) -> None:
        """The request says whether the whole answer went out on it (the first word counts)."""
        if self._settled.done():
            return
        if self._record is not None:
            try:
                self._record(delivered)
            except OSError as exc:
                # Not known delivered, so it is kept for recovery: handed over again, never lost.
                log.warning("an answer went out but couldn't be recorded as delivered: %s", exc)
                delivered = False
        self._settled.set_result(delivered)

    @property
    def gone(self) -> bool:
        """The request went away before its answer was whole."""
        return self._settled.done() and not self._settled.result()

    async def delivered(self, timeout: float) -> bool:
        try:
            return await within(asyncio.shield(self._settled), timeout)
        except TimeoutError:
            return False
