"""What a turn hands the request waiting for it: the answer's text as it is written, then its end.

The turn runs apart from the request, so a request that goes away never stops the answer; the
request says back whether the whole answer went out, and an answer that didn't is kept for
`/_link/recover`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


@dataclass(frozen=True)
class End:
    error: str | None = None
    stopped: bool = False


class Reply:
    def __init__(self) -> None:
        self._queue: asyncio.Queue[str | End] = asyncio.Queue()
        self._settled: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def put(self, text: str) -> None:
        self._queue.put_nowait(text)

    def end(self, end: End) -> None:
        self._queue.put_nowait(end)

    async def next(self) -> str | End:
        return await self._queue.get()

    def settle(self, delivered: bool) -> None:
        """The request says whether the whole answer went out on it."""
        if not self._settled.done():
            self._settled.set_result(delivered)

    @property
    def gone(self) -> bool:
        """The request went away before its answer was whole."""
        return self._settled.done() and not self._settled.result()

    async def delivered(self, timeout: float) -> bool:
        try:
            return await asyncio.wait_for(asyncio.shield(self._settled), timeout)
        except TimeoutError:
            return False
