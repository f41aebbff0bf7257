"""Keeping one child running: start it, wait until it is ready, start it again each time it ends.

The supervisor keeps each of its children this way, the harness and every channel's bridge; what
differs between them is a `Kept`: how the child is spawned, what being ready means, and whether
it must start at all. A keeper's life, one round per start:

    spawn -> starting -> ready? -> running -> ended -> restarting -> (pause) -> spawn ...

Every step is written to the child's record in the part's state file, which `lnk agent status`
reads. The pause between rounds doubles from 1 s up to 30 s while a child keeps ending, and
starts over once a child ran for a minute. A child that answers (`Kept.answers`: the harness,
proven on its endpoint) and ends after is started again at once, however often, since someone
may wait for the answer it cut short. A child that must start (the harness) and can't be spawned,
or ends before it was ever ready, fails the whole supervisor (with its log's last lines, when it
ended), so the start that spawned it says why at once.
"""

from __future__ import annotations

import asyncio
import os
import time
from asyncio.subprocess import Process
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from link_plugin.backoff import Backoff
from link_plugin.errors import LinkError
from link_plugin.waits import waited
from lnk.children import end, tail
from lnk.runstate import Child

START_TIMEOUT = float(os.environ.get("LNK_START_TIMEOUT", "120"))
"""How long a harness may take to answer after it starts (OpenClaw's is about 90 s)."""
HEALTHY_RESET = 60.0
"""A child that ran this long starts its backoff over."""
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 30.0


async def pause(stopping: asyncio.Event, seconds: float) -> None:
    """Wait `seconds`, or less when the supervisor is told to stop."""
    await waited(stopping, seconds)


class Host(Protocol):
    """What a keeper needs of the supervisor it runs in."""

    stopping: asyncio.Event

    def say(self, text: str) -> None: ...

    def fail(self, reason: str) -> None: ...


@dataclass
class Kept:
    """One child, as its keeper sees it."""

    name: str
    spawn: Callable[[], Awaitable[Process]]
    ready: Callable[[Process], Awaitable[bool]]
    """True once the child is up; False if it ended, or didn't come up in time."""
    log: Path
    must_start: bool
    answers: bool = False
    """Being ready means the child answered, so one that ends after is started again at once."""
    on_ready: Callable[[], None] | None = None


class Keeper:
    def __init__(self, kept: Kept, child: Child, host: Host, save: Callable[[], None]) -> None:
        self.kept = kept
        self.child = child
        self.host = host
        self.save = save
        self.backoff = Backoff(FIRST_PAUSE, LONGEST_PAUSE)
        self.ever_ready = False

    async def run(self, first: Process | None = None) -> None:
        """Run the child (`first`, when it was started already) until the supervisor stops."""
        while not self.host.stopping.is_set():
            process = first if first is not None else await self._spawn()
            first = None
            if process is None:
                if self._must_still_start():
                    return
                await pause(self.host.stopping, self.backoff.next())
                continue
            answered = await self._until_ready(process)
            began = time.monotonic()
            if not await self._until_ended(process):
                return
            if self._must_still_start():
                return self._failed_before_ready(process)
            await self._again(process, answered, began)

    def _must_still_start(self) -> bool:
        return self.kept.must_start and not self.ever_ready

    async def _spawn(self) -> Process | None:
        """The new child, or None when it could not be started."""
        try:
            return await self.kept.spawn()
        except (OSError, LinkError) as exc:
            self.child.state, self.child.detail = "failed", str(exc)
            self.save()
            if self._must_still_start():
                self.host.fail(f"{self.kept.name} could not be started: {exc}")
            return None

    async def _until_ready(self, process: Process) -> bool:
        """Whether the child came up; one still running that didn't is ended."""
        child, name = self.child, self.kept.name
        child.pid, child.state, child.since = process.pid, "starting", time.time()
        self.save()
        if await self.kept.ready(process):
            self.ever_ready = True
            child.state, child.since = "running", time.time()
            self.save()
            self.host.say(f"{name} is running (pid {process.pid})")
            if self.kept.on_ready is not None:
                self.kept.on_ready()
            return True
        if process.returncode is None and not self.host.stopping.is_set():
            self.host.say(f"{name} didn't answer within {START_TIMEOUT:.0f} s; stopping it")
            await end(process)
        return False

    async def _until_ended(self, process: Process) -> bool:
        """Wait for the child to end (True), or for the supervisor to stop, which ends it (False)."""
        ended = asyncio.create_task(process.wait())
        stop = asyncio.create_task(self.host.stopping.wait())
        await asyncio.wait({ended, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if self.host.stopping.is_set():
            await end(process)
            self.child.state, self.child.pid = "stopped", None
            self.save()
            return False
        self.child.exit = process.returncode
        return True

    def _failed_before_ready(self, process: Process) -> None:
        log = tail(self.kept.log)
        self.host.fail(
            f"{self.kept.name} ended (exit {process.returncode}) before it answered." + (f"\n{log}" if log else "")
        )

    async def _again(self, process: Process, answered: bool, began: float) -> None:
        """Record the restart, then pause as the backoff says (not at all for a child that answered)."""
        self.child.restarts += 1
        self.child.state, self.child.pid = "restarting", None
        self.save()
        if self.kept.answers and answered:
            self.host.say(f"{self.kept.name} ended (exit {process.returncode}); starting it again")
            self.backoff.reset()
            return
        if time.monotonic() - began > HEALTHY_RESET:
            self.backoff.reset()
        wait = self.backoff.next()
        self.host.say(f"{self.kept.name} ended (exit {process.returncode}); starting it again in {wait:.0f} s")
        await pause(self.host.stopping, wait)
