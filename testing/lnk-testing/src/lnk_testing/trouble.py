"""Trouble a fake service makes on demand, by the name of the method called: flood control (a
429 with the wait to keep), a failure before the call lands (a 502), or an answer that comes late
after the call landed. FakeTelegram and FakeSlack take it alike; each answers a struck call in its
service's own words.

    fake.flood("sendMessage", retry_after=1, times=2)
    struck = fake.strike("sendMessage")  # in the fake's handler, once per call
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Struck:
    """What happens to one call."""

    retry_after: float | None = None
    """Flood control: answer 429, asking to wait this long."""
    failing: bool = False
    """Answer 502 without the call landing."""
    late: float | None = None
    """The call lands, and its answer comes this many seconds late."""


class Trouble:
    """Trouble queued per method, taken call by call in order."""

    def __init__(self) -> None:
        self._floods: dict[str, list[float]] = {}
        self._failures: dict[str, int] = {}
        self._losses: dict[str, list[float]] = {}
        self._trouble_lock = threading.Lock()

    def flood(self, method: str, retry_after: float = 1, times: int = 1) -> None:
        """The next `times` calls of `method` get the service's 429 with `retry_after`."""
        with self._trouble_lock:
            self._floods.setdefault(method, []).extend([retry_after] * times)

    def fail(self, method: str, times: int = 1) -> None:
        """The next `times` calls of `method` get 502 Bad Gateway and don't land."""
        with self._trouble_lock:
            self._failures[method] = self._failures.get(method, 0) + times

    def heal(self, method: str) -> None:
        """Calls of `method` land again: the failures `fail` queued are dropped."""
        with self._trouble_lock:
            self._failures.pop(method, None)

    def lose(self, method: str, delay: float, times: int = 1) -> None:
        """The next `times` calls of `method` land, but their answers come `delay` seconds late."""
        with self._trouble_lock:
            self._losses.setdefault(method, []).extend([delay] * times)

    def strike(self, method: str) -> Struck:
        """What happens to this call of `method`; each queued trouble strikes one call."""
        with self._trouble_lock:
            floods = self._floods.get(method)
            failing = self._failures.get(method, 0) > 0
            if failing:
                self._failures[method] -= 1
            losses = self._losses.get(method)
            return Struck(
                retry_after=floods.pop(0) if floods else None,
                failing=failing,
                late=losses.pop(0) if losses else None,
            )
