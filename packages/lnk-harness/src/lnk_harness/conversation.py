"""One conversation's folder, `chats/<thread>/`, and what its events say.

events/          every event, written once (events.py)
conversation.md  the transcript, rendered from the events (what memory indexes), with
                 conversation.lock its lock, which says how far it got
turn.json        the lease of the running turn (lease.py), with turn.take its lock, and
                 turn.<token>.lock the lock its holder keeps while it lives (holders.py)
tools.json       the tools a subagent's conversation was narrowed to: a grant, kept beside
                 the events and not in them, so no turn reads every event to find it
outbox/          finished answers nobody waited for, until the bridge says they were sent
state.json       what the events say (unanswered, unseen, the running turn), and keys/, the
                 message kept under each key: caches of the events, folded forward (state.py)

Nothing a turn asks walks every event: what the events say is folded in as they come, the
model's window is read from the tail, an answer is found a turn or so after its message, and
the outbox and the keys are records of their own.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from link_plugin.files import write_atomic
from link_plugin.harness import Turns
from link_plugin.wire import Thread, Undelivered, WireError, narrow
from lnk_harness.events import Answer, Delivered, EventLog, MessageIn
from lnk_harness.lease import TurnLease
from lnk_harness.state import STEP_BREAK, ConversationState, History, shown
from lnk_harness.transcript import Transcript
from lnk_harness.window import HISTORY_CHARS, Message


class Grant(BaseModel):
    tools: list[str]


def answer_name(number: int, answer: Answer) -> int:
    """What names answer event `number` in its id: the message that started its turn, or for an
    answer an older harness wrote, its own number. Both are event numbers, so they never clash."""
    return answer.name if answer.name is not None else number


class Conversation:
    def __init__(self, chats: Path, thread: Thread, turns: Turns) -> None:
        self.thread = thread
        self.folder = chats / thread.folder
        self.events = EventLog(self.folder / "events")
        self.lease = TurnLease(self.folder, turns.lapse)
        self._grant = self.folder / "tools.json"
        self._outbox = self.folder / "outbox"
        self.transcript = Transcript(self.folder, thread, self.events)
        self.state = ConversationState(self.folder, self.events)

    def history(self) -> History:
        return self.state.history()

    def model_messages(self, show: list[int], budget: int = HISTORY_CHARS) -> list[Message]:
        """The conversation in OpenAI's message shape (window.py), with `show` (new messages) at the end."""
        return self.state.window(budget) + shown(self.events, show)

    def message(self, number: int) -> MessageIn:
        return self.events.message(number)

    def held(self) -> AbstractContextManager[None]:
        """Its state kept in memory while held: a turn holds its conversation while it runs."""
        return self.state.held()

    def answer_to(self, message: int) -> tuple[int, Answer] | None:
        """The answer (its event's number, and it) that answered `message`, once there is one: the
        first answer after it that names it, a turn or so on, never a walk from the first event."""
        history = self.history()
        if message in history.waiting or message > history.last:
            return None
        for number in range(message + 1, history.last + 1):
            event = self.events.get(number)
            if isinstance(event, Answer) and message in event.messages:
                return number, event
        return None

    def named(self, name: int) -> int | None:
        """The number of the answer event named `name` (answer_name): the one that answered message
        `name`, or, written by an older harness, answer event `name` itself."""
        event = self.events.get(name)
        if isinstance(event, Answer):
            return name if event.name is None else None
        answered = self.answer_to(name) if isinstance(event, MessageIn) else None
        return answered[0] if answered is not None and answer_name(*answered) == name else None

    # --- narrowing (a subagent's tools) ---------------------------------------------------

    def narrowed(self) -> frozenset[str] | None:
        try:
            return frozenset(Grant.model_validate_json(self._grant.read_bytes()).tools)
        except FileNotFoundError:
            return None

    def narrow(self, asked: frozenset[str]) -> frozenset[str]:
        """Intersect the conversation's tools with `asked`: nothing widens them again."""
        with self.lease.locked():
            tools = narrow(self.narrowed(), asked)
            write_atomic(self._grant, Grant(tools=sorted(tools)).model_dump_json())
            return tools

    # --- messages, kept once per key -----------------------------------------------------

    def keep_message(self, message: MessageIn) -> tuple[int, bool]:
        """Keep `message`; (its number, True), or when one was kept under its key already, (that
        one's number, False): a message sent again is never kept twice."""
        if message.key is None:
            return self.events.append(message), True
        # Under the lease's lock, so two requests with one key never both find it new.
        with self.lease.locked():
            kept = self.state.kept_under(message.key)
            if kept is not None:
                return kept, False
            return self.events.append(message), True

    # --- answers, and those nobody waited for ----------------------------------------------

    def answer_id(self, name: int) -> str:
        """An answer's id (Link-Answer-Id, and what /_link/recover lists): `<thread>/<name>`."""
        return f"{self.thread}/{name}"

    def keep(self, number: int, answer: Answer) -> None:
        """Keep a finished answer until the bridge fetches it and says it was sent."""
        content = answer.text
        if answer.error:
            content = f"{content}{STEP_BREAK if content else ''}(The answer stopped: {answer.error})"
        name = answer_name(number, answer)
        undelivered = Undelivered(id=self.answer_id(name), thread=str(self.thread), content=content)
        write_atomic(self._outbox / f"{name}.json", undelivered.model_dump_json())

    def kept(self) -> list[Undelivered]:
        try:
            names = sorted(os.listdir(self._outbox), key=lambda name: (len(name), name))
        except FileNotFoundError:
            return []
        kept = []
        for name in names:
            if name.endswith(".json") and name[:-5].isdigit():
                try:
                    kept.append(Undelivered.model_validate_json((self._outbox / name).read_bytes()))
                except (OSError, ValueError):
                    continue
        return kept

    def is_kept(self, name: int) -> bool:
        return (self._outbox / f"{name}.json").exists()

    def sent(self, name: int, via: Literal["request", "recover"] = "recover") -> bool:
        """The answer named `name` went out: it leaves the outbox first, so it is never handed over twice."""
        try:
            (self._outbox / f"{name}.json").unlink()
        except FileNotFoundError:
            return False
        number = self.named(name)
        if number is not None:
            self.events.append(Delivered(answer=number, via=via))
        return True

    def render(self, agent: str) -> None:
        """Bring what is made from the events up to them: conversation.md, and state.json."""
        self.transcript.render(agent)
        self.state.save()


def folder_thread(name: str) -> Thread | None:
    """The thread a folder of chats/ holds, or None for anything else there."""
    try:
        thread = Thread.parse(name)
    except WireError:
        return None
    return thread if thread.folder == name else None


def parse_answer_id(answer_id: str) -> tuple[Thread, int] | None:
    thread, _, number = answer_id.rpartition("/")
    parsed = folder_thread(thread)
    if parsed is None or not number.isdigit():
        return None
    return parsed, int(number)
