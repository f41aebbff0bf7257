"""The streamed answer: one message edited in place while the answer is written, split past the
channel's limit, its final text shown exactly once. A channel that caps edits (WhatsApp, Signal)
takes it `whole`: nothing is shown until the answer is written, then each message is sent once,
with its final text, and never edited.

Edits go out at most once per `interval` (Telegram, Slack and Discord all throttle faster ones),
the first as soon as the first words arrive, the last at the same pace. Where a message ends is
decided once, when the text outgrows it, so a message never changes boundary. Every call is
retried through flood control and network errors; a retry shows the latest text, so a wait
never leaves an old one behind, and what is already shown is never sent again.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Protocol

from link_plugin.bridge.retry import GIVE_UP, retrying
from link_plugin.bridge.split import Measure, cut

INTERVAL = 1.0
"""Seconds between edits of a streamed answer: about once a second, as the channels allow."""


class Surface(Protocol):
    """Where an answer is shown: a channel's chat. Errors to retry are `retry.RetryLater` and
    `retry.Interrupted`; an edit that changes nothing succeeds."""

    async def send(self, text: str) -> str:
        """Post a new message; its id."""
        ...

    async def edit(self, message: str, text: str) -> None: ...


@dataclass
class Shown:
    message: str
    text: str


class StreamedAnswer:
    def __init__(
        self,
        surface: Surface,
        *,
        limit: int,
        measure: Measure = len,
        interval: float = INTERVAL,
        give_up: float = GIVE_UP,
        whole: bool = False,
    ) -> None:
        self._surface = surface
        self._whole = whole
        self._limit = limit
        self._measure = measure
        self._interval = interval
        self._give_up = give_up
        self._text = ""
        self._cuts: list[int] = [0]
        """Where each message's text starts in the answer; the last one grows."""
        self.shown: list[Shown] = []
        self._changed = asyncio.Event()
        self._finished = asyncio.Event()
        self._pusher: asyncio.Task[None] | None = None

    @property
    def text(self) -> str:
        return self._text

    def add(self, delta: str) -> None:
        """More of the answer. The first words are shown at once, later ones at the pace; a whole
        answer waits for `finish`."""
        if not delta:
            return
        self._text += delta
        self._plan()
        self._changed.set()
        if self._pusher is None and not self._whole:
            self._pusher = asyncio.create_task(self._push_while_written())

    async def finish(self, note: str = "") -> list[Shown]:
        """Show the whole answer (with `note` after it), at the same pace, and wait until every
        message holds its final text. Raises when the channel stayed unreachable past `give_up`."""
        if note:
            self._text = f"{self._text.rstrip()}\n\n{note}" if self._text.strip() else note
            self._plan()
        self._finished.set()
        self._changed.set()
        if self._pusher is None:
            self._pusher = asyncio.create_task(self._push_while_written())
        await self._pusher
        return self.shown

    def _plan(self) -> None:
        """Close each message whose text outgrew the limit, at a boundary, once and for all."""
        while True:
            start = self._cuts[-1]
            tail = self._text[start:]
            if self._measure(tail.strip()) <= self._limit:
                return
            skipped = len(tail) - len(tail.lstrip())
            self._cuts.append(start + skipped + cut(tail.lstrip(), self._limit, self._measure))

    def _targets(self) -> list[str]:
        ends = [*self._cuts[1:], len(self._text)]
        return [self._text[a:b].strip() for a, b in zip(self._cuts, ends, strict=True)]

    async def _show(self) -> None:
        """Bring the chat to the current text: edit what changed, send what is new, in order."""
        for index, target in enumerate(self._targets()):
            if not target:
                continue
            if index < len(self.shown):
                if self.shown[index].text != target:
                    await self._surface.edit(self.shown[index].message, target)
                    self.shown[index].text = target
            else:
                message = await self._surface.send(target)
                self.shown.append(Shown(message, target))

    async def _push_while_written(self) -> None:
        last = float("-inf")
        while True:
            await self._changed.wait()
            wait = last + self._interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._changed.clear()
            final = self._finished.is_set()
            await retrying(self._show, give_up=self._give_up)
            last = time.monotonic()
            if final:
                return
