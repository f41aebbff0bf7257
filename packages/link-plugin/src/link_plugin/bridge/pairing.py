"""The one-time pairing code: printed in the owner's terminal, sent by the owner in a direct
message, and whoever sends it becomes the one the channel answers.

The code is 8 characters from 31 that can't be confused (about 40 bits), compared in constant
time, and expires (10 minutes). Each sender gets a few wrong tries per window; past that their
messages aren't even compared. Too many wrong tries from anyone spend the code, so guessing
from many accounts ends the pairing rather than going on.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import defaultdict, deque
from collections.abc import Callable
from enum import Enum

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
LENGTH = 8
EXPIRES = 600.0
TRIES = 5
"""Wrong codes one sender may send per window."""
WINDOW = 600.0
SPENT_AFTER = 30
"""Wrong codes from everyone together after which the code is spent."""


class Attempt(Enum):
    PAIRED = "paired"
    WRONG = "wrong"
    LIMITED = "limited"
    """Too many wrong tries from this sender: not compared."""
    EXPIRED = "expired"
    SPENT = "spent"
    """Too many wrong tries overall, or already used: the code pairs nobody any more."""


def normalize(text: str) -> str:
    """What the owner typed, as a code: case, spaces and dashes don't matter."""
    return "".join(ch for ch in text.upper() if ch not in " -\t\n")


class PairingCode:
    def __init__(
        self,
        *,
        expires: float = EXPIRES,
        tries: int = TRIES,
        window: float = WINDOW,
        spent_after: int = SPENT_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._code = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
        self._clock = clock
        self._deadline = clock() + expires
        self._tries = tries
        self._window = window
        self._spent_after = spent_after
        self._wrong: dict[str, deque[float]] = defaultdict(deque)
        self._wrong_total = 0
        self._used = False

    @property
    def shown(self) -> str:
        """The code as printed: two groups of four."""
        return f"{self._code[:4]}-{self._code[4:]}"

    @property
    def remaining(self) -> float:
        return max(0.0, self._deadline - self._clock())

    @property
    def expired(self) -> bool:
        return self.remaining <= 0

    @property
    def spent(self) -> bool:
        return self._used or self._wrong_total >= self._spent_after

    def attempt(self, sender: str, text: str) -> Attempt:
        """One message from `sender` during pairing."""
        if self.spent:
            return Attempt.SPENT
        if self.expired:
            return Attempt.EXPIRED
        now = self._clock()
        recent = self._wrong[sender]
        while recent and recent[0] <= now - self._window:
            recent.popleft()
        if len(recent) >= self._tries:
            return Attempt.LIMITED
        if hmac.compare_digest(normalize(text).encode(), self._code.encode()):
            self._used = True
            return Attempt.PAIRED
        recent.append(now)
        self._wrong_total += 1
        return Attempt.SPENT if self.spent else Attempt.WRONG
