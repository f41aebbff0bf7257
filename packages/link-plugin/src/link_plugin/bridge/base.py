"""A channel's bridge: everything but its service, so a channel's own bridge is its connection and
how it reads its messages.

    class MyBridge(Bridge):
        async def reach(self) -> str: ...        # connect to the service; how the log names the bot
        async def listen(self) -> None: ...      # read messages until cancelled: self.spawn(self.heard(...))
        async def close(self) -> None: ...
        def place(self, chat: str) -> Surface: ...   # a chat, for an answer recovery hands over
        def owner_chat(self) -> Asker: ...           # the owner's direct chat, for questions

`run` starts recovery before the service is reached (an answer that finished unseen is asked for
even while the service is away, and delivered once it is reached), reaches the service, starts
asking the owner when the spec names the agent's control socket, then listens. Asked to stop
(SIGTERM, as Link stops or restarts an agent), it listens no more and gives the answers it is
showing `STOP_GRACE` seconds to finish: an answer shown whole is noted as shown before the bridge
ends, so when it is handed over again after the restart it is confirmed, not shown twice. `heard` applies
the rules to each message: only the owner's, in a direct chat or mentioning the bot in a group;
an edit or a message with no text gets a short note, the owner's yes or no to a question shown
answers it (never carried), anything else is carried under its key. `answering` is what a channel
shows while a message is answered besides typing (Slack's 👀); nothing by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import traceback
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any, TypedDict, Unpack

from link_plugin.bridge.answer import Surface
from link_plugin.bridge.asking import BUSY, IDLE, Asker, Asking, Said
from link_plugin.bridge.carry import PACE, Carrier, Pace, Place
from link_plugin.bridge.notices import EVERY, Notices
from link_plugin.bridge.recovery import PROBE, QUICK, Recovery
from link_plugin.bridge.rules import Heard, Incoming, answered
from link_plugin.bridge.shown import ShownAnswers
from link_plugin.bridge.split import Measure
from link_plugin.bridge.tasks import Tasks
from link_plugin.channel import BridgeSpec
from link_plugin.control import ControlClient
from link_plugin.endpoint import EndpointClient
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from link_plugin.scheduler import Notice

UNSUPPORTED = "(I can read text messages only: send this as text.)"
EDITED = "(Edits aren't passed on to the agent: send the change as a new message.)"
STOP_GRACE = 3.0
"""Seconds a stopping bridge gives the answers it is showing; Link ends it 5 s after asking."""


class Timing(TypedDict, total=False):
    """How often a bridge does what it does, each as its module says by default; tests go faster."""

    pace: Pace
    """Edits, typing, holding a message, giving up on the channel (`carry.Pace`)."""
    probe: float
    """`recovery.PROBE`"""
    quick: float
    """`recovery.QUICK`"""
    busy: float
    """`asking.BUSY`"""
    idle: float
    """`asking.IDLE`"""
    notices: float
    """`notices.EVERY`"""


def secret(spec: BridgeSpec, name: str, channel: str) -> str:
    """One of the channel's secrets from the spec, or a LinkError saying how Link gets it."""
    value = spec.secrets.get(name)
    if not value:
        raise LinkError(
            f"the bridge got no {name}",
            f"Run `lnk agent connect {channel}`: Link keeps the channel's tokens and hands them to the bridge.",
        )
    return value


class Bridge(ABC):
    def __init__(
        self,
        spec: BridgeSpec,
        channel: str,
        owner: str,
        *,
        limit: int,
        measure: Measure = len,
        whole: bool = False,
        **timing: Unpack[Timing],
    ) -> None:
        """`whole`: the channel caps how often a message can be edited, so each answer is sent
        whole once written (typing shows meanwhile), split at `limit`, never edited."""
        pace = timing.get("pace", PACE)
        probe, quick = timing.get("probe", PROBE), timing.get("quick", QUICK)
        self.owner = owner
        """The paired owner's id on the channel: nobody else is answered."""
        client = EndpointClient(spec.endpoint, spec.agent)
        shown = ShownAnswers.in_folder(spec.folder, say)
        self.recovery = Recovery(client, channel, self._deliver, say, shown=shown, probe=probe, quick=quick)
        self.carrier = Carrier(
            client,
            self.recovery,
            channel,
            say,
            limit=limit,
            measure=measure,
            steered=spec.steered,
            pace=pace,
            whole=whole,
        )
        self.asking: Asking | None = None
        self._control = ControlClient(spec.approvals) if spec.approvals else None
        self._polls = {"busy": timing.get("busy", BUSY), "idle": timing.get("idle", IDLE), "give_up": pace.give_up}
        self.notices = (
            Notices(Path(spec.outbox), self._notice, say, every=timing.get("notices", EVERY)) if spec.outbox else None
        )
        self._ready = asyncio.Event()
        self.tasks = Tasks()
        self.showing = Tasks()
        """What the service sent, each being handled: let finish when the bridge stops."""

    @abstractmethod
    async def reach(self) -> str:
        """Connect to the service, trying again while it can't be reached; how the log names the
        bot. Raises a LinkError when the service refuses the bot (a revoked token)."""

    @abstractmethod
    async def listen(self) -> None:
        """Read the service's messages until cancelled, each handled on its own (`spawn`)."""

    @abstractmethod
    async def close(self) -> None:
        """Let go of the service's connection."""

    @abstractmethod
    def place(self, chat: str) -> Surface:
        """The chat `chat` names, for an answer recovery hands over."""

    @abstractmethod
    def owner_chat(self) -> Asker:
        """The owner's direct chat, where tool calls waiting for them are asked."""

    async def run(self) -> None:
        """Carry until cancelled or asked to stop (SIGTERM); ends with a LinkError when the service
        refuses the bot."""
        with _stopped_by_sigterm() as stopping:
            self.tasks.spawn(self.recovery.run())
            try:
                name = await self.reach()
                self._ready.set()
                say(f"carrying {name} for the agent")
                if self._control is not None:
                    self.asking = Asking(self._control, self.owner_chat(), self.owner, say, **self._polls)
                    self.tasks.spawn(self.asking.run())
                if self.notices is not None:
                    self.tasks.spawn(self.notices.run())
                await self.listen()
            except asyncio.CancelledError:
                if not stopping.is_set():
                    raise
            finally:
                await self.showing.drain(STOP_GRACE)
                await self.showing.stop()
                await self.tasks.stop()
                await self.close()

    def spawn(self, what: str, work: Coroutine[Any, Any, object]) -> None:
        """Handle one thing the service sent on its own, so a long answer never holds up the next
        message; whatever goes wrong is logged under `what` and never stops the bridge."""
        self.showing.spawn(self._logged(what, work))

    @staticmethod
    async def _logged(what: str, work: Coroutine[Any, Any, object]) -> None:
        try:
            await work
        except Exception:
            say(f"{what} failed:\n{traceback.format_exc()}")

    async def heard(self, message: Heard, place: Place) -> None:
        """One message from the service, as the rules say: nothing, a short note, the owner's answer
        to a question, or carried to the agent and answered in `place`."""
        if not answered(message.incoming, self.owner):
            return
        if message.edited:
            await self.carrier.deliver(place, EDITED)
        elif message.text is None:
            await self.carrier.deliver(place, UNSUPPORTED)
        elif self.carrier.carried(message.chat, message.key):
            say(f"{message.chat}: message {message.key} came again; it was carried already")
        elif message.text and not await self._answers_a_question(message):
            with self._carrying():
                async with self.answering(place):
                    await self.carrier.carry(message.chat, message.text, place, key=message.key)

    @asynccontextmanager
    async def answering(self, place: Place) -> AsyncIterator[None]:
        """While a message is carried and answered: what the channel shows besides typing."""
        yield

    async def press(self, incoming: Incoming, message: str, value: str) -> Said | None:
        """A press of a question's button under `message`; what to tell whoever pressed it (None:
        nothing, a stranger's press)."""
        if self.asking is None:
            return None
        return await self.asking.press(incoming, message, value)

    async def _answers_a_question(self, message: Heard) -> bool:
        """The owner's yes or no to a question shown: Link's answer, never carried to the harness."""
        return (
            self.asking is not None
            and message.text is not None
            and await self.asking.reply(message.incoming, message.text, message.replied)
        )

    def _carrying(self) -> AbstractContextManager[None]:
        """While an answer is carried a tool call may wait for the owner: look for one often."""
        return self.asking.busy() if self.asking is not None else nullcontext()

    async def _notice(self, notice: Notice) -> None:
        """An answer nobody waited for: in the owner's own direct chat (never a group), or the chat
        it names (the conversation a subagent was started from)."""
        place = self.owner_chat() if notice.chat is None else self.place(notice.chat)
        await self.carrier.deliver(place, notice.text)

    async def _deliver(self, chat: str, text: str) -> None:
        """A recovered answer, once the service is reached."""
        await self._ready.wait()
        await self.carrier.deliver(self.place(chat), text)


@contextlib.contextmanager
def _stopped_by_sigterm() -> Iterator[asyncio.Event]:
    """While in it, SIGTERM cancels the running task and sets the event it gives: a stop asked for,
    not a failure. Only where signals can be had (the main thread of a process's own loop)."""
    stopping = asyncio.Event()
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()

    def stop() -> None:
        stopping.set()
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, stop)
    except (RuntimeError, ValueError, NotImplementedError):
        yield stopping  # not the main thread, or no signals here: stopped by cancelling alone
        return
    try:
        yield stopping
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
