"""The tasks a bridge runs side by side (one per message, recovery), letting them finish, and
stopping them all.

Python 3.11's `asyncio.wait_for` can swallow a cancel (`link_plugin.waits`, which the bridge's
own waits use): a task is cancelled again until it has really stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class Tasks:
    def __init__(self) -> None:
        self._running: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(work)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def drain(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for every task to end by itself."""
        if self._running:
            await asyncio.wait(list(self._running), timeout=timeout)

    async def stop(self) -> None:
        """Cancel every task and wait until each has ended."""
        while self._running:
            for task in list(self._running):
                task.cancel()
            await asyncio.wait(list(self._running), timeout=0.1)
