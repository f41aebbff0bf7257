"""The runner: says each message when it is due, and sends its answer where it goes.

It runs beside the agent's channel bridges (`lnk-scheduler run`, started by Link with a
`RunnerSpec` on stdin), looks at what is due every `TICK` seconds (a folder listing), and says each
message through its `Driver`: the agent's endpoint (`EndpointDriver`), or one in process in tests.
Where an answer goes:

- a subagent's: to its parent conversation, said there as the subagent's (`answer`), and that
  answer on up the chain in turn;
- an answer in a channel's conversation: to that chat, through the channel's outbox;
- any other (a schedule's, another agent's): to the owner's own direct chat on the agent's first
  connected channel, never a group; with no channel connected, only to the runner's log, which
  `lnk agent logs` shows.

A message the endpoint can't be reached for stays due and is said at the next look; one it refuses
(past the agent's hop cap, say) is dropped and logged, never said again. A message is marked said
only after it was, so a crash between the two says it again under the same `Link-Message-Id`,
which a harness that says `once` keeps once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from link_plugin import wire
from link_plugin.endpoint import EndpointClient, EndpointError, EndpointRefused
from link_plugin.scheduler import Notice, outbox, post
from lnk_scheduler.store import Due, Store, new_id

TICK = 1.0
"""Seconds between looks at what is due."""
OWN_THREADS = frozenset({"schedule", "subagent", "agent"})
"""Conversations of the scheduler's own: their answers go to the owner, or up to a parent."""

Log = Callable[[str], None]


class Unreachable(Exception):
    """The endpoint can't be reached now: the message stays due."""


class Refused(Exception):
    """The endpoint refused the message (past the hop cap, a header it won't take): it is dropped."""


class Driver(Protocol):
    async def say(self, due: Due) -> str | None:
        """Say `due` to the agent; its answer, or None when it joined a running turn (whose answer
        is that turn's)."""
        ...


class EndpointDriver:
    """Says each message to the agent's endpoint, as a bridge would, with Link-From and Link-Hops."""

    def __init__(self, client: EndpointClient) -> None:
        self._client = client

    async def say(self, due: Due) -> str | None:
        sender = wire.Sender(who=due.sender, hops=due.hops)
        tools = frozenset(due.tools) if due.tools is not None else None
        try:
            async with self._client.chat(
                due.text, wire.Thread.parse(due.thread), message_id=due.occurrence, sender=sender, tools=tools
            ) as reply:
                return None if reply.steered else await reply.text()
        except EndpointRefused as exc:
            raise Refused(str(exc)) from exc
        except EndpointError as exc:  # unreachable, no proof, an answer broken off: said again later
            raise Unreachable(str(exc)) from exc


class Runner:
    def __init__(
        self,
        store: Store,
        driver: Driver,
        channels: list[str],
        log: Log,
        *,
        now: Callable[[], datetime] | None = None,
        tick: float = TICK,
        narrows: bool = True,
    ) -> None:
        """`narrows`: the endpoint narrows a conversation by `Link-Tools`; when it doesn't, a
        narrowed subagent is refused rather than started with every tool."""
        self.narrows = narrows
        self.store = store
        self.driver = driver
        self.channels = channels
        self.log = log
        self.now = now or (lambda: datetime.now(UTC))
        self._tick = tick
        self._waiting: set[str] = set()
        """Messages already logged as waiting for the endpoint: said once, not at every look."""

    async def run(self) -> None:
        """Look at what is due until cancelled; a missed schedule is said at the first look."""
        while True:
            await self.once()
            await asyncio.sleep(self._tick)

    async def once(self) -> int:
        """Say what is due now, soonest first; how many were said."""
        said = 0
        for due in await asyncio.to_thread(self.store.due, self.now()):
            if await self._say(due):
                said += 1
        return said

    async def _say(self, due: Due) -> bool:
        if due.tools is not None and not self.narrows:
            self.log(f"{due.sender}: a subagent with fewer tools can't be started: the harness doesn't narrow them")
            self.store.said(due, self.now())
            return False
        if due.kind == "subagent" and due.reply_to is not None:
            self.store.route(due.thread, due.reply_to)
        try:
            answer = await self.driver.say(due)
        except Unreachable as exc:
            if due.id not in self._waiting:
                self._waiting.add(due.id)
                self.log(f"{due.sender}: the agent can't be reached ({exc}); it is said once it can")
            return False
        except Refused as exc:
            self._waiting.discard(due.id)
            self.log(f"{due.sender}: {exc}; it is not said again")
            self.store.said(due, self.now())
            self.store.parent(due.thread, take=True)
            return False
        self._waiting.discard(due.id)
        self.store.said(due, self.now())
        if answer:
            self._route(due, answer)
        return True

    def _route(self, due: Due, answer: str) -> None:
        """Send the answer of `due`'s conversation where it goes (above)."""
        parent = self.store.parent(due.thread, take=True)
        now = self.now()
        if parent is not None:
            self.store.add(
                Due(
                    id=new_id(),
                    kind="answer",
                    text=answer,
                    sender=due.thread,
                    thread=parent,
                    hops=due.hops + 1,
                    at=now,
                    start=now,
                )
            )
            return
        thread = wire.Thread.parse(due.thread)
        if thread.channel not in OWN_THREADS and thread.channel in self.channels:
            self._post(thread.channel, thread.chat, answer, due)
        elif self.channels:
            self._post(self.channels[0], None, answer, due)
        else:
            self.log(f"{due.sender}: answered, kept here (no channel is connected):\n{answer}")

    def _post(self, channel: str, chat: str | None, answer: str, due: Due) -> None:
        post(outbox(self.store.folder, channel), Notice(id=new_id(), chat=chat, text=answer, sender=due.sender))
        where = f"chat {chat}" if chat is not None else "the owner's chat"
        self.log(f"{due.sender}: answered; the answer goes to {where} on {channel}")


def serve(state: Path, client: EndpointClient, channels: list[str], log: Log, *, narrows: bool) -> None:
    """`lnk-scheduler run`: the runner over the agent's endpoint, until stopped."""
    runner = Runner(Store(state), EndpointDriver(client), channels, log, narrows=narrows)
    owners = channels[0] if channels else "this log (no channel is connected)"
    log(f"running: {len(runner.store.all())} waiting; answers for the owner go to {owners}")
    asyncio.run(runner.run())
