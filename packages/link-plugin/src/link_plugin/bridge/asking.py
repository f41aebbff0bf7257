"""Tool calls waiting for the owner, asked in their direct chat and answered from it.

The bridge polls the agent's control socket (`ControlClient.waiting`): every `busy` seconds
while it carries a message (the turn that may call a tool is running) and every `idle` seconds
otherwise (a turn begun elsewhere: the terminal, another channel). Each new question is posted
once with Allow and Deny buttons; the owner answers with a button or with a reply that reads as
yes or no (`reads_as`; a reply to the question answers that one, a plain one the oldest shown),
either of which goes to the control socket and never to the harness.
Only the paired owner's answer, in their direct chat, counts: anyone else's press or reply is
no answer at all. A question that stops waiting without an answer from here (answered in the
terminal or another chat, or it waited too long) is settled as gone, its buttons taken away.
A control socket that is absent or goes away is tried again at the next poll; nothing is lost.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from link_plugin.approvals import Question, reads_as
from link_plugin.bridge.answer import Surface
from link_plugin.bridge.recovery import Log
from link_plugin.bridge.retry import GIVE_UP, retrying
from link_plugin.bridge.rules import Incoming
from link_plugin.control import ControlClient
from link_plugin.endpoint import EndpointError
from link_plugin.waits import waited

BUSY = 0.5
"""Seconds between polls while a message is being carried."""
IDLE = 5.0
"""Seconds between polls otherwise."""
SETTLED = 200
"""Settled questions remembered, so a late reply to one is told it came too late."""

ALLOW = "allow"
DENY = "deny"
BUTTONS = (("Allow", ALLOW), ("Deny", DENY))
"""The buttons under a question: their label, and the value a press of each gives back."""


class Said(Enum):
    """What became of an answer, as the owner is told."""

    ALLOWED = "Allowed."
    DENIED = "Denied."
    GONE = "This call no longer waits: it was answered elsewhere, or it waited too long."
    UNREACHABLE = "The agent can't be reached right now, so nothing was answered: try again in a moment."


class Asker(Surface, Protocol):
    """The owner's direct chat, as a channel asks questions there. `send` tells the owner a line."""

    async def ask(self, question: Question) -> str:
        """Post `question.wording()` with the `BUTTONS`; the message's id."""
        ...

    async def settle(self, message: str, text: str) -> None:
        """Show a question's final text in its message, its buttons gone."""
        ...


@dataclass
class _Asked:
    question: Question
    message: str
    answering: bool = False


class Asking:
    def __init__(
        self,
        client: ControlClient,
        chat: Asker,
        owner: str,
        log: Log,
        *,
        busy: float = BUSY,
        idle: float = IDLE,
        give_up: float = GIVE_UP,
    ) -> None:
        self._client = client
        self._chat = chat
        self._owner = owner
        self._log = log
        self._busy_pace = busy
        self._idle_pace = idle
        self._give_up = give_up
        self._open: dict[str, _Asked] = {}
        """Questions shown with their buttons, by id, oldest first."""
        self._done: set[str] = set()
        """Questions settled (or that couldn't be asked) while a poll may still list them."""
        self._settled: deque[str] = deque(maxlen=SETTLED)
        """The messages of the latest questions settled, so a late reply to one isn't taken for another's."""
        self._carrying = 0
        self._wake = asyncio.Event()
        self._reached = True

    @contextmanager
    def busy(self) -> Iterator[None]:
        """While a message is carried: poll at the busy pace, starting now."""
        self._carrying += 1
        self._wake.set()
        try:
            yield
        finally:
            self._carrying -= 1

    async def run(self) -> None:
        """Poll and ask until cancelled."""
        while True:
            self._wake.clear()
            await self._poll()
            pace = self._busy_pace if self._carrying else self._idle_pace
            await waited(self._wake, pace)

    async def _poll(self) -> None:
        try:
            waiting = await self._client.waiting()
        except EndpointError as exc:
            if self._reached:
                self._log(f"asking the owner: {exc}; trying again at each poll")
            self._reached = False
            return
        if not self._reached:
            self._log("asking the owner: the control socket answers again")
        self._reached = True
        listed = {question.id for question in waiting}
        self._done &= listed
        for asked in [a for a in self._open.values() if a.question.id not in listed]:
            # Looked at again after each await: an answer from the chat may have settled it meanwhile.
            if self._open.get(asked.question.id) is asked and not asked.answering:
                await self._settle(asked, Said.GONE)
        for question in waiting:
            if question.id not in self._open and question.id not in self._done:
                await self._ask(question)

    async def _ask(self, question: Question) -> None:
        try:
            message = await retrying(lambda: self._chat.ask(question), give_up=self._give_up)
        except Exception as exc:
            self._done.add(question.id)
            self._log(
                f"asking the owner: {question.tool} {question.call} couldn't be asked ({type(exc).__name__}: {exc})"
            )
            return
        self._open[question.id] = _Asked(question, message)

    async def _settle(self, asked: _Asked, said: Said) -> None:
        self._open.pop(asked.question.id, None)
        self._done.add(asked.question.id)
        self._settled.append(asked.message)
        text = f"{asked.question.wording()}\n\n{said.value}"
        try:
            await retrying(lambda: self._chat.settle(asked.message, text), give_up=self._give_up)
        except Exception as exc:
            self._log(f"asking the owner: a question's end couldn't be shown ({type(exc).__name__}: {exc})")

    def _owners(self, incoming: Incoming) -> bool:
        """Questions are asked in the owner's direct chat, and answered there by the owner alone."""
        return incoming.direct and incoming.sender == self._owner

    async def _answer(self, asked: _Asked, allow: bool) -> Said:
        asked.answering = True
        try:
            taken = await self._client.answer(asked.question.id, allow)
        except EndpointError as exc:
            self._log(f"asking the owner: an answer couldn't be sent ({exc})")
            return Said.UNREACHABLE
        finally:
            asked.answering = False
        said = (Said.ALLOWED if allow else Said.DENIED) if taken else Said.GONE
        await self._settle(asked, said)
        return said

    async def press(self, incoming: Incoming, message: str, value: str) -> Said | None:
        """A button pressed under `message`; what to tell whoever pressed it. None: no answer (a
        stranger's press, or a press on no question of ours), and nothing to tell."""
        if not self._owners(incoming) or value not in (ALLOW, DENY):
            return None
        asked = next((a for a in self._open.values() if a.message == message), None)
        if asked is None:
            return Said.GONE
        if asked.answering:
            return None
        return await self._answer(asked, value == ALLOW)

    async def reply(self, incoming: Incoming, text: str, replied_to: str | None = None) -> bool:
        """A message that may answer a question: the owner's, in their direct chat, reading as yes
        or no. As a reply to a question it answers that one; as a reply to any other message of the
        bot's it is the agent's; otherwise it answers the oldest question shown, if any. True when
        it was taken as an answer, so it must not be carried to the harness."""
        allow = reads_as(text)
        if allow is None or not self._owners(incoming):
            return False
        if replied_to is None:
            shown = [a for a in self._open.values() if not a.answering]
            asked = shown[0] if shown else None
            if asked is None:
                return False
        else:
            asked = next((a for a in self._open.values() if a.message == replied_to), None)
            if asked is None and replied_to not in self._settled:
                return False
            if asked is not None and asked.answering:
                return True
        said = await self._answer(asked, allow) if asked is not None else Said.GONE
        if said in (Said.GONE, Said.UNREACHABLE):
            with suppress(Exception):
                await retrying(lambda: self._chat.send(said.value), give_up=self._give_up)
        return True
