"""Waiting longer after each failure: the one backoff every part of Link retries with.

A bridge reaching its service, a chat reaching its agent, a supervisor starting a child again:
each waits `first` seconds after its first failure, twice that after the next, up to `most`,
and starts over from `first` once something worked. `next()` only says how long (a thread
waits on its own event with it); `wait()` sleeps that long in asyncio.
"""

from __future__ import annotations

import asyncio


class Backoff:
    """Waits that double from `first` up to `most`, back to `first` after a success."""

    def __init__(self, first: float = 0.25, most: float = 8.0) -> None:
        self._first = first
        self._most = most
        self.delay = first

    def next(self) -> float:
        delay = self.delay
        self.delay = min(delay * 2, self._most)
        return delay

    async def wait(self) -> None:
        await asyncio.sleep(self.next())

    def reset(self) -> None:
        self.delay = self._first
