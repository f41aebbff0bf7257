"""Turns: one per conversation at a time, held by its lease, answering what was said.

A message is kept (an event) before it gets here. Then it takes the conversation's lease and
runs a turn, or, when a turn is running, does what `[turns] busy` says: `steer` joins the
running turn (the request is answered 202, and the answer comes on the request that started
the turn), `queue` waits for its own turn, `stop` stops the running one and then takes its turn.

A lease left by a process that died lapses (at once, when its holder is provably gone); whoever
takes it next finishes that turn first: tool calls that never answered are answered "not made
again" and the model goes on, and a turn that had already answered everything only has its
lease let go, never a second answer. An answer nobody waits for is kept for `/_link/recover`.

Each answer is named from the start by the message whose request started its turn (its id,
`<thread>/<number>`), so the request knows the id before the first token and recovery lists the
answer by the same id; a turn finishing a dead one keeps the dead one's name. A message sent
again (its key kept already) is never kept twice: it gets its answer again, or the turn that
answers it.
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
from link_plugin.waits import waited
from link_plugin.wire import Thread
from lnk_harness import model, way_out
from lnk_harness.conversation import Conversation, answer_name, folder_thread
from lnk_harness.events import Answer, CallMade, Delivered, MessageIn, Output, Result
from lnk_harness.lease import Lease, Taken
from lnk_harness.prompt import system_prompt
from lnk_harness.reply import End, Joined, Reply
from lnk_harness.state import STEP_BREAK, History
from lnk_harness.tools import Toolbox, ToolCalls, ToolSpec, ToolUnreachable

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


def _hops(conversation: Conversation, history: History) -> int:
    """How many hops the messages a turn answers came: the most of them (0: the owner's alone)."""
    hops = 0
    for number in history.waiting:
        event = conversation.events.get(number)
        if isinstance(event, MessageIn) and event.sender is not None:
            hops = max(hops, event.sender.hops)
    return hops


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

    async def loaded(self, thread: Thread) -> Conversation:
        """The conversation, its state loaded in this process: off the event loop the first time,
        since a conversation an older harness wrote is read whole, once, and nobody else waits."""
        conversation = self.conversation(thread)
        if not conversation.state.loaded():
            await asyncio.to_thread(conversation.state.load)
        return conversation

    # --- a message arrives ----------------------------------------------------------------

    async def arrive(self, conversation: Conversation, number: int) -> Reply | Joined:
        """Message `number` was kept: run its turn (a Reply to stream), or Joined when it steered."""
        busy = self.settings.turns.busy
        folder = conversation.folder
        line = self._waiting.setdefault(folder, [])
        insort(line, number)
        try:
            while True:
                if line[0] == number:
                    with conversation.lease.locked():
                        taken = conversation.lease.take_locked(answer=number)
                        if isinstance(taken, Lease) and not taken.closing:
                            if busy == "steer":
                                return Joined(None if taken.answer is None else conversation.answer_id(taken.answer))
                            if busy == "stop":
                                conversation.lease.ask_stop_locked()
                                running = self._running.get(folder)
                                if running is not None:
                                    running.stop.set()
                    if isinstance(taken, Taken):
                        return self._start(conversation, taken, own=number)
                await self._wait(folder)
                answered = conversation.answer_to(number)
                if answered is not None:
                    # A turn finishing a lapsed one answered it with the rest.
                    return Joined(conversation.answer_id(answer_name(*answered)))
        finally:
            line.remove(number)
            if not line:
                del self._waiting[folder]

    async def _wait(self, folder: Path) -> None:
        ended = self._ended.setdefault(folder, asyncio.Event())
        await waited(ended, WAIT_POLL)

    def _signal(self, folder: Path) -> None:
        ended = self._ended.pop(folder, None)
        if ended is not None:
            ended.set()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _start(self, conversation: Conversation, taken: Taken, own: int) -> Reply:
        reply = Reply(conversation.answer_id(own))
        self._spawn(self._run(conversation, taken, own, reply))
        return reply

    # --- a message sent again -------------------------------------------------------------

    async def again(self, conversation: Conversation, number: int) -> Reply:
        """Message `number` came again (its key was kept already). Never a second turn for it, and
        never a steer: its answer once more, by the same id, when it has one; else the answer of the
        turn that will answer it, once it has; else (no live turn: none ran, or its holder died)
        a turn of its own, which first finishes a dead one."""
        while True:
            answered = conversation.answer_to(number)
            if answered is not None:
                return self._repeat(conversation, *answered)
            taken = conversation.lease.try_take(number)
            if isinstance(taken, Taken):
                return self._start(conversation, taken, own=number)
            await self._wait(conversation.folder)

    @staticmethod
    def _repeat(conversation: Conversation, number: int, answer: Answer) -> Reply:
        """An answer already given, sent again whole; once it goes out it leaves the outbox."""
        name = answer_name(number, answer)
        reply = Reply(conversation.answer_id(name))
        if answer.text:
            reply.put(answer.text)

        def record(delivered: bool) -> None:
            if delivered and conversation.is_kept(name):
                conversation.sent(name, via="request")

        reply.end(End(error=answer.error, stopped=answer.stopped), record)
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
        """Finish the turn of a lease left behind: at once when its holder is provably gone, else
        once it lapses (looking again every `renew`, in case its holder ends meanwhile)."""
        turns = self.settings.turns
        while True:
            lease = conversation.lease.read()
            if lease is None:
                return
            wait = lease.renewed + turns.lapse - time.time()
            if wait > 0 and not conversation.lease.gone(lease):
                await asyncio.sleep(min(wait + 0.01, turns.renew))
                continue
            taken = conversation.lease.try_take(recovery_name(conversation.history(), lease.answer, None))
            if isinstance(taken, Taken):
                await self._run(conversation, taken, None, None)
                return
            if taken.holder != lease.holder:
                return  # someone else took it over, and finishes it

    # --- running a turn -------------------------------------------------------------------

    async def _run(self, conversation: Conversation, taken: Taken, own: int | None, reply: Reply | None) -> None:
        # Its state stays in memory while the turn runs, however many other conversations come.
        with conversation.held():
            await self._run_held(conversation, taken, own, reply)

    async def _run_held(self, conversation: Conversation, taken: Taken, own: int | None, reply: Reply | None) -> None:
        running = Running(taken.holder)
        self._running[conversation.folder] = running
        this = asyncio.current_task()
        assert this is not None
        renewer = asyncio.create_task(self._renew(conversation, running, this))
        keep_lease = False
        settle: Settle | None = None
        try:
            if taken.lapsed is not None:
                limit = None if own is None else own - 1
                first = await self._turn(conversation, running, limit, None, taken.lapsed.answer, recovering=True)
                if first is not None:
                    await asyncio.to_thread(self._settle, conversation, first)
            if own is not None:
                limit = None if self.settings.turns.busy == "steer" else own
                settle = await self._turn(conversation, running, limit, reply, own)
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
                with suppress(OSError):  # closed or not, the lease is let go below
                    conversation.lease.close(running.holder)
                reply.end(End(error=f"the turn failed: {type(exc).__name__}: {exc}"))
        finally:
            renewer.cancel()
            self._running.pop(conversation.folder, None)
            if not keep_lease:
                # Off the event loop, in one go: the disk's slow moments hold up no other turn.
                await asyncio.to_thread(self._close, conversation, running.holder, settle)
            elif running.lost:
                conversation.lease.release(running.holder)
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
        answer = conversation.events.get(history.answer) if not history.delivered else None
        if isinstance(answer, Answer) and not conversation.is_kept(answer_name(history.answer, answer)):
            conversation.keep(history.answer, answer)
        for call, made in history.open_calls():
            content = LOST_MADE if made else LOST_UNMADE
            conversation.events.append(Result(turn=turn, call=call.id, name=call.name, content=content, lost=True))

    async def _turn(
        self,
        conversation: Conversation,
        running: Running,
        limit: int | None,
        reply: Reply | None,
        name: int | None,
        *,
        recovering: bool = False,
    ) -> Settle | None:
        """Answer the conversation's unanswered messages up to `limit` (None: all, and any that steer in).

        The answer is named `name`; a turn recovering a dead one names it after the dead one's
        (`name`, when that is still unanswered) or after the first message it answers."""
        history = conversation.history()
        if recovering:
            self._settle_lapsed(conversation, history, running.holder)
            history = conversation.history()
            name = recovery_name(history, name, limit)
            if name is None:
                return None
        error: str | None = None
        stopped = False
        narrowed = conversation.narrowed()
        owner = history.owners and narrowed is None
        names = self.toolbox.servers(narrowed)
        async with ToolCalls(self.toolbox, names, str(conversation.thread), _hops(conversation, history)) as calls:
            try:
                while True:
                    show = history.unseen(limit)
                    narrowed = conversation.narrowed()
                    offered = await self.toolbox.offered(narrowed, owner)
                    system = system_prompt(self.settings, conversation.thread, owner)
                    messages = conversation.model_messages(show)
                    step, partial = await self._ask(running, system, messages, offered, reply, bool(history.texts))
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
                if isinstance(exc, model.ModelUnreachable):
                    # Unless the sandbox is ending under this harness: its turn is then the next
                    # harness's to finish, and this one never gets past here.
                    await way_out.leave_if_gone(f"{conversation.thread}: {exc.message}")
                # The model failed, or an event can't be read: the answer says so, and the turn
                # ends as every turn does, so the next one doesn't take this one's text for its own.
                error = exc.message
                log.warning("%s: %s", conversation.thread, exc)
        if reply is not None:
            # However the turn ended (its model failed, it was stopped, or it answered), it is
            # closed to new messages before its answer goes out: a message sent once the answer
            # was seen waits for a turn of its own, never joins one that has answered.
            conversation.lease.close(running.holder)
        return await self._answer(conversation, running, limit, reply, name, error, stopped)

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
            raise model.ModelUnreachable("the model's answer ended before it finished")

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
                try:
                    content = await calls.call(spec, call.arguments)
                except ToolUnreachable as exc:
                    # A sandbox ending cut the call: no result, so the next harness says it was
                    # made and not made again. Else the tool failed, and the model is told so.
                    await way_out.leave_if_gone(f"{conversation.thread}: {exc.message}")
                    content = exc.message
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
        name: int | None,
        error: str | None,
        stopped: bool,
    ) -> Settle:
        history = conversation.history()
        answered = [m for m in history.unanswered(limit) if history.seen(m) or error is not None]
        answer = Answer(
            turn=running.holder,
            messages=answered,
            text=history.turn_text(),
            waited=reply is not None and not reply.gone,
            error=error,
            stopped=stopped,
            name=name,
        )
        number = conversation.events.append(answer)
        delivered = False
        if reply is not None:
            # Written before the last bytes go out, and named (one link) the moment they did: a
            # crash in between has the answer handed over again by the id the request already
            # had, so it is seen as shown; the shorter that moment, the rarer even that is.
            went_out = conversation.events.prepare(Delivered(answer=number, via="request"))

            def record(delivered: bool) -> None:
                try:
                    if delivered:
                        went_out.name()
                finally:
                    went_out.close()

            reply.end(End(error=error, stopped=stopped), record)
            delivered = await reply.delivered(DELIVERY_WAIT)
        return Settle(number, answer, delivered)

    @staticmethod
    def _settle(conversation: Conversation, settle: Settle) -> None:
        """An answer its request didn't take whole waits for /_link/recover (one it took was
        recorded as it went out)."""
        if not settle.delivered:
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


def recovery_name(history: History, dead: int | None, limit: int | None) -> int | None:
    """The name of the answer a turn finishing a dead one writes: the dead one's, when that message
    is still unanswered, else the first it answers; None when it has nothing to answer."""
    unanswered = history.unanswered(limit)
    if dead in unanswered:
        return dead
    return unanswered[0] if unanswered else None
