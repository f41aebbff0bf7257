"""Answers nobody waits for, shown from the bridge's outbox folder (`link_plugin.scheduler`).

A schedule's answer, another agent's, or a subagent's once it reached a chat is posted as a
notice in the channel's outbox. The bridge looks every `EVERY` seconds (a folder listing: next to
nothing), shows each in the owner's own direct chat, or in the chat it names, and removes it only
once shown: a bridge that was down, or a chat that failed, shows it at the next look.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from link_plugin.bridge.recovery import Log
from link_plugin.scheduler import Notice, waiting

EVERY = 1.0
"""Seconds between looks in the outbox."""

Show = Callable[[Notice], Awaitable[None]]


class Notices:
    def __init__(self, folder: Path, show: Show, log: Log, *, every: float = EVERY) -> None:
        self._folder = folder
        self._show = show
        self._log = log
        self._every = every

    async def once(self) -> int:
        """Show what waits, oldest first; how many were shown. One that fails stops the round, so
        nothing after it overtakes it."""
        shown = 0
        for path, notice in await asyncio.to_thread(waiting, self._folder):
            try:
                await self._show(notice)
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"
                self._log(f"an answer for {notice.sender} couldn't be shown ({why}); it is tried at the next look")
                return shown
            path.unlink(missing_ok=True)
            shown += 1
        return shown

    async def run(self) -> None:
        while True:
            await self.once()
            await asyncio.sleep(self._every)
