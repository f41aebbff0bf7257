"""The one-time pairing code: printed in the owner's terminal, sent by the owner in a direct
message, and whoever sends it becomes the one the channel answers.

The code is 8 characters from 31 that can't be confused (about 40 bits), compared in constant
time, and expires (10 minutes). Each sender gets a few wrong tries per window; past that their
messages aren't even compared. Too many wrong tries from anyone spend the code, so guessing
from many accounts ends the pairing rather than going on.

`Pairing` is the conversation around it, the same on every channel: each direct message while the
code is shown is tried, and its sender told how it went (wrong, too many tries, expired, paired);
a spent code ends `connect` with what to do. `paired` reads the channel's section back in the
bridge, saying what to do when it names no owner.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from link_plugin.errors import LinkError

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
LENGTH = 8
EXPIRES = 600.0
TRIES = 5
"""Wrong codes one sender may send per window."""
WINDOW = 600.0
SPENT_AFTER = 30
"""Wrong codes from everyone together after which the code is spent."""

WRONG = "That isn't the code shown in the terminal. Check it and send it again."
LIMITED = "Too many wrong codes: wait a few minutes before trying again."
PAIRED = "Paired: this bot now answers you, and only you."

Section = TypeVar("Section", bound=BaseModel)


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


def expired_text(channel: str) -> str:
    """What the sender of a code that came too late is told."""
    return f"That code expired. Run `lnk agent connect {channel}` again for a new one."


class Pairing:
    """The owner's direct chat while `code` is shown: each message is tried, and its sender told how it went."""

    def __init__(self, code: PairingCode, channel: str) -> None:
        self.code = code
        self._channel = channel
        self._told: set[str] = set()
        """Senders told they tried too often: told once, then nothing."""

    async def take(self, sender: str, text: str, reply: Callable[[str], Awaitable[None]]) -> bool:
        """One direct message from `sender`; True when it paired them (they are told so). Raises a
        LinkError when the code is spent, so `connect` ends saying what to do."""
        outcome = self.code.attempt(sender, text)
        if outcome is Attempt.PAIRED:
            await reply(PAIRED)
            return True
        if outcome is Attempt.WRONG:
            await reply(WRONG)
        elif outcome is Attempt.EXPIRED:
            await reply(expired_text(self._channel))
        elif outcome is Attempt.LIMITED and sender not in self._told:
            self._told.add(sender)
            await reply(LIMITED)
        elif outcome is Attempt.SPENT:
            raise LinkError(
                "too many wrong codes were sent to the bot, so the code no longer pairs anyone",
                f"Run `lnk agent connect {self._channel}` again for a new code. If strangers keep writing "
                "to the bot, make a new one for this agent.",
            )
        return False

    def expired(self, bot: str, expires: float) -> LinkError:
        """How `connect` ends when nobody sent the code in time."""
        return LinkError(
            f"the pairing code expired: it wasn't sent to {bot} within {expires / 60:g} minutes",
            f"Run `lnk agent connect {self._channel}` again for a new code.",
        )


def paired(model: type[Section], section: dict[str, Any], title: str, channel: str) -> Section:
    """The channel's section from the agent's settings; a LinkError saying how to pair when it names no owner."""
    try:
        return model.model_validate(section)
    except ValidationError as exc:
        raise LinkError(
            f"{title} isn't paired for this agent: its settings name no owner",
            f"Run `lnk agent connect {channel}` to pair it with your {title} account.",
        ) from exc
