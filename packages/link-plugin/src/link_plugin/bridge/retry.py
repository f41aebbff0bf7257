"""Retrying a channel's calls through flood control and network errors.

A channel translates its library's errors: the service said when to come back (Telegram's 429
with retry_after, Slack's Retry-After) is `RetryLater`; the network broke before the call could
have landed is `Interrupted`. Anything else is not retried. The waits between network errors
are `link_plugin.backoff.Backoff`'s, offered here too (`retry.Backoff`), where it was first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from link_plugin.backoff import Backoff as Backoff

T = TypeVar("T")

GIVE_UP = 600.0
"""Seconds of retrying after which a call fails for good."""


class RetryLater(Exception):
    """The service asked us to wait `after` seconds before calling again."""

    def __init__(self, after: float) -> None:
        super().__init__(f"flood control: retry after {after} s")
        self.after = after


class Interrupted(Exception):
    """The call could not reach the service: calling again is safe."""


async def retrying(
    call: Callable[[], Awaitable[T]],
    *,
    give_up: float = GIVE_UP,
    first_backoff: float = 0.25,
    max_backoff: float = 8.0,
) -> T:
    """Run `call` until it succeeds, waiting as the service asks or backing off on network errors."""
    deadline = time.monotonic() + give_up
    backoff = Backoff(first_backoff, max_backoff)
    while True:
        try:
            return await call()
        except RetryLater as exc:
            wait = exc.after
        except Interrupted:
            wait = backoff.next()
        if time.monotonic() + wait > deadline:
            raise TimeoutError(f"gave up after {give_up:.0f} s of flood control and network errors")
        await asyncio.sleep(wait)
