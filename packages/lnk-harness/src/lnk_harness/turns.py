"""Turns: one per conversation at a time, held by its lease, answering what was said.

A message is kept (an event) before it gets here. Then it takes the conversation's lease and
runs a turn, or, when a turn is running, does what `[turns] busy` says: `steer` joins the
running turn (the request is answered 202, and the answer comes on the request that started
the turn), `queue` waits for its own turn, `stop` stops the running one and then takes its turn.

A lease left by a process that died lapses; whoever takes it next finishes that turn first:
tool calls that never answered are answered "not made again" and the model goes on, and a turn
that had already answered everything only has its lease let go, never a second answer. An
answer nobody waits for is kept for `/_link/recover`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from bisect import insort
from collections.abc import AsyncIterator, Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from link_plugin import LinkError
from link_plugin.harness import HarnessSettings
from link_plugin.wire import Thread
from lnk_harness import model
from lnk_harness.conversation import STEP_BREAK, Conversation, History, folder_thread
from lnk_harness.events import Answer, CallMade, Delivered, MessageIn, Output, Result
from lnk_harness.lease import Lease, Taken
from lnk_harness.prompt import system_prompt
from lnk_harness.reply import End, Reply
from lnk_harness.tools import Toolbox, ToolCalls, ToolSpec

log = logging.getLogger("lnk_harness.turns")

WAIT_POLL = 0.05
"""Seconds between looks at a lease held by another process (one in this process says at once)."""
DELIVERY_WAIT = 30.0
"""How long a finished answer waits for its request to take it before it is kept for recover."""

LOST_MADE = (
    "This call was made, but its answer was lost when the turn stopped; it was not made again. "
    "Check whether it took effect before calling it again."
)
LOST_UNMADE = (
    "This call was not made: the turn stopped before it. It was not made again; call it again if it is still needed."
)
STOPPED_CALL = "This call was not made: a new message stopped the turn."
NO_SUCH_TOOL = "There is no tool named {name} in this conversation; the call was not made."


@dataclass(frozen=True)
class Settle:
    """A finished answer, and whether its request took it whole."""

    number: int
    answer: Answer
    delivered: bool


@dataclass
class Running:
    """This process's view of a turn it runs."""

    holder: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    lost: bool = False
    """Another process took the lease (this one went too long without renewing it)."""


class Turns:
    """The turns of one agent's conversations, run by this process."""

    def __init__(self, settings: HarnessSettings, toolbox: Toolbox, http: httpx.AsyncClient) -> None:
        self.settings = settings
        self.toolbox = toolbox
        self.http = http
        self.chats = Path(settings.folders.chats)
        self._running: dict[Path, Running] = {}
        self._ended: dict[Path, asyncio.Event] = {}
        self._waiting: dict[Path, list[int]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def conversation(self, thread: Thread) -> Conversation:
        return Conversation(self.chats, thread, self.settings.turns)

    # --- a message arrives ----------------------------------------------------------------

    async def arrive(self, conversation: Conversation, number: int) -> Reply | None:
        """Message `number` was kept: run its turn (a Reply to stream), or None when it steered."""
        busy = self.settings.turns.busy
        folder = conversation.folder
        line = self._waiting.setdefault(folder, [])
        insort(line, number)
        try:
            while True:
                if line[0] == number:
                    with conversation.lease.locked():
                        taken = conversation.lease.take_locked()
                        if isinstance(taken, Lease) and not taken.closing:
                            if busy == "steer":
                                return None
                            if busy == "stop":
                                conversation.lease.ask_stop_locked()
                                running = self._running.get(folder)
                                if running is not None:
                                    running.stop.set()
                    if isinstance(taken, Taken):
                        return self._start(conversation, taken, own=number)
                await self._wait(folder)
                if number in conversation.history().answered:
                    return None  # a turn finishing a lapsed one answered it with the rest
        finally:
            line.remove(number)
            if not line:
                del self._waiting[folder]

    async def _wait(self, folder: Path) -> None:
        ended = self._ended.setdefault(folder, asyncio.Event())
        with suppress(TimeoutError):
            await asyncio.wait_for(ended.wait(), WAIT_POLL)

    def _signal(self, folder: Path) -> None:
        ended = self._ended.pop(folder, None)
        if ended is not None:
            ended.set()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _start(self, conversation: Conversation, taken: Taken, own: int) -> Reply:
        reply = Reply()
        self._spawn(self._run(conversation, taken, own, reply))
        return reply

    # --- recovery at start ----------------------------------------------------------------

    def recover(self) -> None:
        """Watch every lease a process left behind; finish each turn once its lease lapses."""
        if not self.chats.is_dir():
            return
        for folder in self.chats.iterdir():
            if (folder / "turn.json").exists():
                thread = folder_thread(folder.name)
                if thread is not None:
                    self._spawn(self._finish_when_lapsed(self.conversation(thread)))

    async def _finish_when_lapsed(self, conversation: Conversation) -> None:
        lapse = self.settings.turns.lapse
        while True:
            lease = conversation.lease.read()
            if lease is None:
                return
            wait = lease.renewed + lapse - time.time()
            if wait > 0:
                await asyncio.sleep(wait + 0.01)
                continue
            taken = conversation.lease.try_take()
            if isinstance(taken, Taken):
                await self._run(conversation, taken, None, None)
            return  # or someone took it first, and finishes it

    # --- running a turn -------------------------------------------------------------------

    async def _run(self, conversation: Conversation, taken: Taken, own: int | None, reply: Reply | None) -> None:
        running = Running(taken.holder)
        self._running[conversation.folder] = running
        this = asyncio.current_task()
        assert this is not None
        renewer = asyncio.create_task(self._renew(conversation, running, this))
        keep_lease = False
        settle: Settle | None = None
        try:
            if taken.lapsed is not None:
                first = await self._turn(conversation, running, None if own is None else own - 1, None, recovering=True)
                if first is not None:
                    await asyncio.to_thread(self._settle, conversation, first)
            if own is not None:
                limit = None if self.settings.turns.busy == "steer" else own
                settle = await self._turn(conversation, running, limit, reply)
        except asyncio.CancelledError:
            keep_lease = True
            if not running.lost:
                # The process is stopping mid-turn: the next start finishes the turn at once.
                conversation.lease.hand_over(running.holder)
                raise
            log.warning("%s: another process took the turn's lease; it finishes the turn", conversation.thread)
            if reply is not None:
                reply.end(End(error="another process took this turn over; its answer comes from there"))
        except Exception as exc:
            log.exception("%s: the turn failed", conversation.thread)
            if reply is not None:
                reply.end(End(error=f"the turn failed: {type(exc).__name__}: {exc}"))
        finally:
            renewer.cancel()
            self._running.pop(conversation.folder, None)
            if not keep_lease:
                # Off the event loop, in one go: the disk's slow moments hold up no other turn.
                await asyncio.to_thread(self._close, conversation, running.holder, settle)
            self._signal(conversation.folder)
            if not keep_lease:
                # After letting go, so the next turn needn't wait for the transcript.
                await asyncio.to_thread(conversation.render, self.settings.agent.name)

    async def _renew(self, conversation: Conversation, running: Running, turn: asyncio.Task[object]) -> None:
        while True:
            await asyncio.sleep(self.settings.turns.renew)
            lease = conversation.lease.renew(running.holder)
            if lease is None:
                running.lost = True
                turn.cancel()
                return
            if lease.stop:
                running.stop.set()

    def _settle_lapsed(self, conversation: Conversation, history: History, turn: str) -> None:
        """What a dead turn left open: its answer's delivery, and calls that never answered."""
        answers = [(n, e) for n, e in history.events if isinstance(e, Answer)]
        if answers:
            number, answer = answers[-1]
            delivered = any(isinstance(e, Delivered) and e.answer == number for _, e in history.events)
            if answer.waited and not delivered and not conversation.is_kept(number):
                conversation.keep(number, answer)
        for call, made in history.open_calls():
            content = LOST_MADE if made else LOST_UNMADE
            conversation.events.append(Result(turn=turn, call=call.id, name=call.name, content=content, lost=True))

    async def _turn(
        self,
        conversation: Conversation,
        running: Running,
        limit: int | None,
        reply: Reply | None,
        *,
        recovering: bool = False,
    ) -> Settle | None:
        """Answer the conversation's unanswered messages up to `limit` (None: all, and any that steer in)."""
        history = conversation.history()
        if recovering:
            self._settle_lapsed(conversation, history, running.holder)
            history = conversation.history()
            if not history.unanswered(limit):
                return None
        error: str | None = None
        stopped = False
        narrowed = conversation.narrowed()
        owner = history.owners and narrowed is None
        names = self.toolbox.servers(narrowed)
        async with ToolCalls(self.toolbox, names) as calls:
            try:
                while True:
                    show = history.unseen(limit)
                    narrowed = conversation.narrowed()
                    offered = await self.toolbox.offered(narrowed, owner)
                    system = system_prompt(self.settings, conversation.thread, owner)
                    step, partial = await self._ask(
                        running, system, history.model_messages(show), offered, reply, bool(history.turn_text())
                    )
                    if step is None:
                        conversation.events.append(Output(turn=running.holder, took=show, text=partial, stopped=True))
                        stopped = True
                        break
                    conversation.events.append(Output(turn=running.holder, took=show, text=step.text, calls=step.calls))
                    if step.calls:
                        stopped = await self._call(conversation, running, calls, step, offered)
                        if stopped:
                            break
                    elif limit is not None or not self._steered_in(conversation, running, history):
                        break
                    history = conversation.history()
            except LinkError as exc:
                # The model failed, or an event can't be read: the answer says so, and the turn
                # ends as every turn does, so the next one doesn't take this one's text for its own.
                error = exc.message
                log.warning("%s: %s", conversation.thread, exc)
        return await self._answer(conversation, running, limit, reply, error, stopped)

    async def _ask(
        self,
        running: Running,
        system: str,
        messages: list[dict[str, object]],
        tools: list[ToolSpec],
        reply: Reply | None,
        step_break: bool,
    ) -> tuple[model.Step | None, str]:
        """One call to the model, streamed to the waiting request; (None, text so far) when stopped."""
        assert self.settings.model is not None
        pieces: list[str] = []
        stream: AsyncIterator[str | model.Step] = model.stream(self.http, self.settings.model, system, messages, tools)

        async def consume() -> model.Step:
            async for item in stream:
                if isinstance(item, model.Step):
                    return item
                if reply is not None:
                    if not pieces and step_break:
                        reply.put(STEP_BREAK)
                    reply.put(item)
                pieces.append(item)
            raise model.ModelError("the model's answer ended before it finished")

        asking = asyncio.create_task(consume())
        stopping = asyncio.create_task(running.stop.wait())
        try:
            await asyncio.wait({asking, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not asking.done():
                asking.cancel()
                with suppress(asyncio.CancelledError):
                    await asking
        if asking.cancelled():
            return None, "".join(pieces)
        return asking.result(), "".join(pieces)

    async def _call(
        self,
        conversation: Conversation,
        running: Running,
        calls: ToolCalls,
        step: model.Step,
        offered: list[ToolSpec],
    ) -> bool:
        """Make the step's tool calls in order; True when a new message stopped the turn."""
        by_name = {spec.name: spec for spec in offered}
        stopped = False
        for call in step.calls:
            spec = by_name.get(call.name)
            if running.stop.is_set():
                stopped = True
                content = STOPPED_CALL
            elif spec is None:
                content = NO_SUCH_TOOL.format(name=call.name)
            else:
                conversation.events.append(CallMade(turn=running.holder, call=call.id, name=call.name))
                content = await calls.call(spec, call.arguments)
            conversation.events.append(Result(turn=running.holder, call=call.id, name=call.name, content=content))
        return stopped

    def _steered_in(self, conversation: Conversation, running: Running, history: History) -> bool:
        """Whether a message came while the model answered; if none, the turn closes to new ones."""
        with conversation.lease.locked():
            if any(isinstance(e, MessageIn) for _, e in conversation.events.read(after=history.last)):
                return True
            conversation.lease.close_locked(running.holder)
            return False

    async def _answer(
        self,
        conversation: Conversation,
        running: Running,
        limit: int | None,
        reply: Reply | None,
        error: str | None,
        stopped: bool,
    ) -> Settle:
        history = conversation.history()
        answered = [m for m in history.unanswered(limit) if m in history.taken or error is not None]
        answer = Answer(
            turn=running.holder,
            messages=answered,
            text=history.turn_text(),
            waited=reply is not None and not reply.gone,
            error=error,
            stopped=stopped,
        )
        number = conversation.events.append(answer)
        delivered = False
        if reply is not None:
            reply.end(End(error=error, stopped=stopped))
            delivered = await reply.delivered(DELIVERY_WAIT)
        return Settle(number, answer, delivered)

    @staticmethod
    def _settle(conversation: Conversation, settle: Settle) -> None:
        """The answer went out on its request, or waits for /_link/recover."""
        if settle.delivered:
            conversation.events.append(Delivered(answer=settle.number, via="request"))
        else:
            conversation.keep(settle.number, settle.answer)

    def _close(self, conversation: Conversation, holder: str, settle: Settle | None) -> None:
        if settle is not None:
            self._settle(conversation, settle)
        conversation.lease.let_go(holder)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with suppress(asyncio.CancelledError, Exception):
                await task
