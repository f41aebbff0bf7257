"""Answers that finished with nobody waiting (the harness restarted mid-turn), delivered once.

The bridge asks `/_link/recover` as it starts and whenever the endpoint answers again after it
couldn't be reached, never on a timer while all is well. While the endpoint is unreachable it is
probed every few seconds; each probe is proven before the key is sent, like any message. Each
answer for this channel goes to its chat and is then confirmed; one delivered but not yet
confirmed is confirmed again without being delivered twice. Answers for another channel's threads
are left for that channel's bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from link_plugin import wire
from link_plugin.endpoint import EndpointClient, EndpointError, EndpointUnreachable, ProofFailed

PROBE = 2.0
"""Seconds between probes of an unreachable endpoint."""

Deliver = Callable[[str, str], Awaitable[None]]
"""Send a recovered answer: (chat id, text)."""
Log = Callable[[str], None]


class Recovery:
    def __init__(
        self, client: EndpointClient, channel: str, deliver: Deliver, log: Log, *, probe: float = PROBE
    ) -> None:
        self._client = client
        self._channel = channel
        self._deliver = deliver
        self._log = log
        self._probe = probe
        self._reachable = asyncio.Event()
        self._lost = asyncio.Event()
        self._wake = asyncio.Event()
        self._delivered: set[str] = set()
        self.rounds = 0
        """How many times recovery was asked and answered."""

    def lost(self) -> None:
        """A message found the endpoint unreachable: recover when it answers again."""
        self._reachable.clear()
        self._lost.set()

    def reached(self) -> None:
        """A message got through: if we thought the endpoint lost, ask recovery now."""
        if not self._reachable.is_set():
            self._wake.set()

    async def reachable(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the endpoint to answer again."""
        try:
            await asyncio.wait_for(self._reachable.wait(), max(timeout, 0))
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """Recover now, then again each time the endpoint comes back. Runs until cancelled."""
        while True:
            await self._recover_when_reached()
            self._reachable.set()
            await self._lost.wait()
            self._lost.clear()

    async def _recover_when_reached(self) -> None:
        said = False
        while True:
            try:
                await self._round()
                return
            except ProofFailed as exc:
                if not said:
                    self._log(f"recovery: {exc}")
            except EndpointUnreachable as exc:
                if not said:
                    self._log(f"the agent's endpoint can't be reached ({exc}); trying every {self._probe:g} s")
            except EndpointError as exc:
                self._log(f"recovery: {exc}")
            said = True
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._probe)

    async def _round(self) -> None:
        answers = await self._client.recover()
        self.rounds += 1
        for answer in answers:
            try:
                thread = wire.Thread.parse(answer.thread)
            except wire.WireError:
                continue
            if thread.channel != self._channel:
                continue
            if answer.id not in self._delivered:
                try:
                    await self._deliver(thread.chat, answer.content)
                except Exception as exc:
                    # Left unconfirmed: the harness hands it over again at the next recovery.
                    self._log(f"recovery: an answer for {thread} couldn't be delivered ({type(exc).__name__}: {exc})")
                    continue
                self._delivered.add(answer.id)
            await self._client.confirm([answer.id])
