"""One message from a channel to the harness endpoint, and its answer back.

Messages to one conversation are sent in the order they came, each once the one before it was
taken (answered or steered), and answered side by side: a message sent while an answer is being
written steers it (202), and is marked as the agent's settings say. "Typing" shows until the
answer is done. An endpoint that can't be reached holds the message until it answers again (up to
`hold`), then it is sent again with the same key, its channel's id for it (`Link-Message-Id`), so
a harness that kept it before it died keeps it once. One that breaks mid-answer already had the
message, so what was shown says so and the answer comes by recovery.

An answer whose head names its id (`Link-Answer-Id`) is noted as shown once the channel took its
final text (`ShownAnswers`); the same answer coming again (recovered, or streamed again for a
message sent again) is not shown twice. A message the service hands over again while the bridge
runs (Slack sends an event again when it missed the acknowledgement) is carried once: the
latest `RECENT` keys carried are remembered. After a restart, the harness keeps it once by its key.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict, deque
from collections.abc import Awaitable
from contextlib import suppress
from dataclasses import dataclass
from typing import Protocol

from link_plugin import wire
from link_plugin.bridge.answer import INTERVAL, StreamedAnswer, Surface
from link_plugin.bridge.recovery import Log, Recovery
from link_plugin.bridge.retry import GIVE_UP, Interrupted, RetryLater
from link_plugin.bridge.split import Measure
from link_plugin.endpoint import (
    ChatReply,
    EndpointClient,
    EndpointError,
    EndpointRefused,
    EndpointUnreachable,
    ProofFailed,
)

INTERRUPTED = "(The agent stopped before it finished; its answer will follow when it's back.)"
UNREACHABLE = "(The agent isn't answering right now, so this message wasn't passed on. Try again in a while.)"
RECENT = 4096
"""Message keys carried that a bridge remembers while it runs."""


class Place(Surface, Protocol):
    """The chat a message came from, as its channel shows things there."""

    async def typing(self) -> None:
        """Show the agent typing (for a few seconds, or until a message is sent)."""
        ...

    async def mark(self, mark: str) -> None:
        """Mark the message that came (it steered a running turn)."""
        ...


@dataclass(frozen=True)
class Pace:
    interval: float = INTERVAL
    """Seconds between edits of a streamed answer."""
    typing: float = 4.0
    """Seconds between "typing" signals (channels show one for about five)."""
    hold: float = 120.0
    """Seconds a message waits for an unreachable endpoint before the owner is told."""
    give_up: float = GIVE_UP
    """Seconds of flood control and network errors after which a call to the channel fails."""


PACE = Pace()


class Carrier:
    def __init__(
        self,
        client: EndpointClient,
        recovery: Recovery,
        channel: str,
        log: Log,
        *,
        limit: int,
        measure: Measure = len,
        steered: str | None = None,
        pace: Pace = PACE,
        whole: bool = False,
    ) -> None:
        self._client = client
        self._whole = whole
        self._recovery = recovery
        self._channel = channel
        self._log = log
        self._limit = limit
        self._measure = measure
        self._steered = steered
        self._pace = pace
        self._order: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._shown = recovery.shown
        self._carried: deque[tuple[str, str]] = deque(maxlen=RECENT)

    def answer(self, place: Surface) -> StreamedAnswer:
        """A streamed answer in `place`, at this channel's limit and pace (whole, where it caps edits)."""
        return StreamedAnswer(
            place,
            limit=self._limit,
            measure=self._measure,
            interval=self._pace.interval,
            give_up=self._pace.give_up,
            whole=self._whole,
        )

    async def deliver(self, place: Surface, text: str) -> None:
        """A whole answer at once (recovered ones), split at the limit."""
        answer = self.answer(place)
        answer.add(text)
        await answer.finish()

    def carried(self, chat: str, key: str) -> bool:
        """Whether the message `key` in `chat` was carried already while the bridge runs."""
        return (str(wire.Thread(channel=self._channel, chat=chat)), key) in self._carried

    async def carry(self, chat: str, text: str, place: Place, *, key: str) -> None:
        """Send the message to the endpoint and show its answer in `place`. `key` is the channel's id
        for the message (`endpoint.message_id`), the same whenever the service hands it over again."""
        thread = wire.Thread(channel=self._channel, chat=chat)
        wire.parse_message_id(key)
        if (str(thread), key) in self._carried:
            self._log(f"{thread}: message {key} came again; it was carried already")
            return
        self._carried.append((str(thread), key))
        typing = asyncio.create_task(self._keep_typing(place))
        try:
            await self._carry(thread, text, key, place)
        finally:
            typing.cancel()

    async def _carry(self, thread: wire.Thread, text: str, key: str, place: Place) -> None:
        deadline = time.monotonic() + self._pace.hold
        while True:
            try:
                answer = await self._send(thread, text, key, place)
            except (EndpointUnreachable, ProofFailed) as exc:
                self._recovery.lost()
                self._log(f"{thread}: holding a message, the endpoint can't be reached ({exc})")
                if await self._recovery.reachable(deadline - time.monotonic()):
                    continue
                await self.deliver(place, UNREACHABLE)
                return
            except EndpointRefused as exc:
                self._log(f"{thread}: {exc}")
                await self.deliver(place, f"(The agent refused this message: {exc.message})")
                return
            except EndpointError as exc:
                self._log(f"{thread}: {exc}")
                await self.deliver(place, f"(The agent failed: {exc.message})")
                return
            if answer is not None:
                await answer
            return

    async def _send(self, thread: wire.Thread, text: str, key: str, place: Place) -> Awaitable[object] | None:
        """Send the message and stream its answer; what is left to do once the connection is closed.

        Raises what the endpoint did before it took the message; after it took it (it answered),
        the message is never sent again."""
        order = self._order[str(thread)]
        held = True
        await order.acquire()
        answer: StreamedAnswer | None = None
        claimed: str | None = None
        reply_id: str | None = None
        try:
            async with self._client.chat(text, thread, message_id=key) as reply:
                order.release()
                held = False
                self._recovery.reached()
                if reply.steered:
                    return self._quietly(place.mark(self._steered)) if self._steered else None
                reply_id = reply.answer_id
                if reply.answer_id is not None:
                    if not await self._shown.claim(reply.answer_id):
                        await self._leave(thread, reply)
                        return None
                    claimed = reply.answer_id
                answer = self.answer(place)
                async for delta in reply.deltas():
                    answer.add(delta)
        except (EndpointUnreachable, ProofFailed) as exc:
            if answer is None:
                self._release(claimed)
                raise
            self._recovery.lost(owed=thread, answer=reply_id)
            self._log(f"{thread}: the endpoint broke mid-answer ({exc}); the answer comes by recovery")
            return self._finish(answer, claimed, INTERRUPTED)
        except EndpointError as exc:
            if answer is None:
                self._release(claimed)
                raise
            self._log(f"{thread}: {exc}")
            return self._finish(answer, claimed, f"(The agent failed: {exc.message})")
        except BaseException:
            self._release(claimed)
            raise
        finally:
            if held:
                order.release()
        return self._finish(answer, claimed) if answer is not None else None

    async def _leave(self, thread: wire.Thread, reply: ChatReply) -> None:
        """An answer shown before (its message was sent again): read to its end, shown nothing."""
        self._log(f"{thread}: answer {reply.answer_id} was shown before; not shown again")
        with suppress(EndpointError):
            await reply.drain()

    async def _finish(self, answer: StreamedAnswer, claimed: str | None, broke_off: str = "") -> None:
        """Show the answer's final text, with what `broke_off` it after it if it did. One that came
        whole is noted as shown by its id, once the channel took it and before anything confirms it."""
        try:
            await answer.finish(broke_off)
            if claimed is not None and not broke_off:
                await self._shown.add(claimed)
        finally:
            self._release(claimed)

    def _release(self, claimed: str | None) -> None:
        if claimed is not None:
            self._shown.release(claimed)

    async def _keep_typing(self, place: Place) -> None:
        while True:
            await self._quietly(place.typing())
            await asyncio.sleep(self._pace.typing)

    @staticmethod
    async def _quietly(signal: Awaitable[None]) -> None:
        """A signal that may be lost (typing, a mark): one try; flood control and network errors skip it."""
        with suppress(RetryLater, Interrupted):
            await signal
