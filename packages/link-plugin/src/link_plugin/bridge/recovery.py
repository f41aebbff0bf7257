"""Answers that finished with nobody waiting (the harness restarted mid-turn), delivered once.

The bridge asks `/_link/recover` as it starts and whenever the endpoint answers again after it
couldn't be reached, never on a timer while all is well. While the endpoint is unreachable it is
probed, four times a second for the first few seconds after it was lost (a harness restarted at
once is back within them) and every two seconds after; each probe is proven before the key is
sent, like any message. A restarted harness finishes what its dead self left (an answer nobody
took) as it takes each conversation again, which can be just after the first round, so once the
endpoint is back (and after the bridge starts) recovery is asked at the same pace for `SETTLE`
seconds more. An answer that broke off mid-way is owed: a harness whose lease must lapse first
answers it later still, so while an answer is owed recovery is asked until it comes (up to
`OWED`): that answer, by the id its stream said, not another of the same chat that was waiting
(shown whole before its harness noted it). Each answer for this channel
goes to its chat and is then confirmed; one already shown (`ShownAnswers`, by its id: shown by
this bridge before it restarted, or streamed whole before the harness died) is confirmed without
being shown again. Answers for another channel's threads are left for that channel's bridge.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from link_plugin import wire
from link_plugin.bridge.shown import ShownAnswers
from link_plugin.endpoint import EndpointClient, EndpointError, EndpointUnreachable, ProofFailed
from link_plugin.waits import waited

PROBE = 2.0
"""Seconds between probes of an unreachable endpoint, and between asks while an answer is owed."""
QUICK = 0.25
"""Seconds between them while a loss is fresh: a probe refused on the loopback costs next to nothing."""
QUICKLY = 10.0
"""Seconds after a loss (or the bridge's start) during which probes and asks come `QUICK`ly."""
SETTLE = 10.0
"""Seconds recovery is asked again after the endpoint came back (or the bridge started)."""
OWED = 900.0
"""Seconds an answer that broke off is asked for: the harness's lease lapses (60 s by default),
then the model answers the turn again."""

Deliver = Callable[[str, str], Awaitable[None]]
"""Send a recovered answer: (chat id, text)."""
Log = Callable[[str], None]


class Recovery:
    def __init__(
        self,
        client: EndpointClient,
        channel: str,
        deliver: Deliver,
        log: Log,
        *,
        shown: ShownAnswers | None = None,
        probe: float = PROBE,
        quick: float = QUICK,
        settle: float = SETTLE,
        owed_for: float = OWED,
    ) -> None:
        self._client = client
        self._channel = channel
        self._deliver = deliver
        self._log = log
        self.shown = shown if shown is not None else ShownAnswers(None, log)
        """What this bridge showed: the carrier notes streamed answers here too."""
        self._probe = probe
        self._quick = min(quick, probe)
        self._lost_at = time.monotonic()
        self._back_at = self._lost_at
        self._settle = settle
        self._owed_for = owed_for
        self._owed: dict[str, tuple[float, str | None]] = {}
        """Threads whose answer broke off: until when it is asked for, and its id (None: the endpoint
        said none, so any answer of the thread ends the asking)."""
        self._reachable = asyncio.Event()
        self._lost = asyncio.Event()
        self._wake = asyncio.Event()
        self.rounds = 0
        """How many times recovery was asked and answered."""

    def lost(self, owed: wire.Thread | None = None, answer: str | None = None) -> None:
        """A message found the endpoint unreachable (or its answer, `answer` by id, broke off in
        `owed`): recover when it answers again, and for an owed answer, until it comes."""
        self._lost_at = time.monotonic()
        if owed is not None:
            self._owed[str(owed)] = (self._lost_at + self._owed_for, answer)
        self._reachable.clear()
        self._lost.set()

    def reached(self) -> None:
        """A message got through: if we thought the endpoint lost, ask recovery now."""
        if not self._reachable.is_set():
            self._wake.set()

    async def reachable(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the endpoint to answer again."""
        return await waited(self._reachable, timeout)

    async def run(self) -> None:
        """Recover now, then again each time the endpoint comes back, for a few seconds after, and
        while an answer is owed. Runs until cancelled."""
        while True:
            await self._recover_when_reached()
            if not self._reachable.is_set():
                self._back_at = time.monotonic()
            self._reachable.set()
            if self._still_owed() or time.monotonic() - self._back_at < self._settle:
                await waited(self._lost, self._pause())
            else:
                await self._lost.wait()
            self._lost.clear()

    def _pause(self) -> float:
        """Seconds until the next probe or ask: `quick` while the loss is fresh, `probe` after."""
        return self._quick if time.monotonic() - self._lost_at < QUICKLY else self._probe

    def _still_owed(self) -> bool:
        now = time.monotonic()
        for thread, (until, _) in list(self._owed.items()):
            if until < now:
                del self._owed[thread]
                self._log(f"recovery: the answer owed in {thread} never came; no longer asking for it")
        return bool(self._owed)

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
                    self._log(
                        f"the agent's endpoint can't be reached ({exc}); trying again, every {self._probe:g} s at most"
                    )
            except EndpointError as exc:
                self._log(f"recovery: {exc}")
            except Exception as exc:
                # Recovery lasts as long as the bridge: one round that failed in a way nobody
                # foresaw is said and asked again, never the end of every answer owed.
                self._log(f"recovery: a round failed ({type(exc).__name__}: {exc}); asking again")
            said = True
            self._wake.clear()
            await waited(self._wake, self._pause())

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
            if await self.shown.claim(answer.id):
                try:
                    await self._deliver(thread.chat, answer.content)
                    await self.shown.add(answer.id)
                except Exception as exc:
                    # Left unconfirmed: the harness hands it over again at the next recovery.
                    self._log(f"recovery: an answer for {thread} couldn't be delivered ({type(exc).__name__}: {exc})")
                    continue
                finally:
                    self.shown.release(answer.id)
            self._came(str(thread), answer.id)
            await self._client.confirm([answer.id])

    def _came(self, thread: str, answer: str) -> None:
        """An answer of `thread` was handed over: the owed one, unless the owed one has another id."""
        owed = self._owed.get(thread)
        if owed is not None and owed[1] in (None, answer):
            del self._owed[thread]
