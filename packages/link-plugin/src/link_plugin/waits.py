"""Waiting with a time limit, never swallowing a cancel.

Python 3.11's `asyncio.wait_for` returns its awaitable's result when a cancel lands as that
awaitable finishes: the task then runs on as if never cancelled, and whatever waits for it to end
(`asyncio.run` as it closes, a bridge stopping) waits forever. Everything in link-plugin that waits
with a limit uses these instead; they are built on `asyncio.timeout`, which ends on every cancel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """`awaitable`'s result, or TimeoutError once `seconds` passed."""
    async with asyncio.timeout(max(seconds, 0)):
        return await awaitable


async def waited(event: asyncio.Event, seconds: float) -> bool:
    """Wait up to `seconds` for `event`: whether it was set."""
    try:
        await within(event.wait(), seconds)
    except TimeoutError:
        return False
    return True
