"""Running async work (a bridge) on an event loop of its own thread, beside a synchronous test."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any


class Background:
    """Runs `work()` until it ends (`error` holds what it raised) or `stop` cancels it."""

    def __init__(self, work: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        self.error: BaseException | None = None
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[Any] | None = None
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        async def main() -> None:
            self._task = asyncio.current_task()
            await work()

        try:
            self._loop.run_until_complete(main())
        except asyncio.CancelledError:
            pass
        except BaseException as exc:
            self.error = exc
        finally:
            # As asyncio.run does: what the work left running (a client library's own tasks) ends first.
            left = asyncio.all_tasks(self._loop)
            for task in left:
                task.cancel()
            if left:
                self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self._loop.close()

    def wait(self, timeout: float = 10.0) -> None:
        self._thread.join(timeout)

    def stop(self) -> None:
        """Cancel the work, again until it has ended (a cancel can be swallowed on Python 3.11)."""
        deadline = time.monotonic() + 10
        while self._thread.is_alive() and time.monotonic() < deadline:
            if self._task is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._task.cancel)
            self._thread.join(0.2)
