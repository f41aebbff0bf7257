"""Waiting for what a person would wait for, polling briefly rather than sleeping long."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T | None], timeout: float, what: str | Callable[[], str]) -> T:
    """Poll `condition` every 50 ms until it gives something true (and so not None); fail saying
    `what` didn't happen (a function gives it as things are then)."""
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what() if callable(what) else what} didn't happen within {timeout:.0f} s")
        time.sleep(0.05)
