"""One conversation's folder, `chats/<thread>/`, and what its events say.

events/          every event, written once (events.py)
conversation.md  the transcript, rendered from the events (what memory indexes), with
                 conversation.lock its lock, which says how far it got
turn.json        the lease of the running turn (lease.py), with turn.take its lock, and
                 turn.<token>.lock the lock its holder keeps while it lives (holders.py)
tools.json       the tools a subagent's conversation was narrowed to: a grant, kept beside
                 the events and not in them, so no turn reads every event to find it
outbox/          finished answers nobody waited for, until the bridge says they were sent
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from link_plugin.files import write_atomic
from link_plugin.harness import Turns
from link_plugin.wire import Thread, Undelivered, WireError, narrow
from lnk_harness.events import Answer, Asked, CallMade, Delivered, EventLog, MessageIn, Numbered, Output, Result
from lnk_harness.lease import TurnLease
from lnk_harness.transcript import Transcript

STEP_BREAK = "\n\n"
"""Between the text of two steps of one answer (before and after a tool call, or a steering message)."""
HISTORY_CHARS = 100_000
"""How much of a conversation's past goes to the model (about 25,000 tokens); what's older is in
conversation.md, which memory searches."""


class Grant(BaseModel):
    tools: list[str]


def speaker_line(message: MessageIn) -> str:
    """How the model is told who speaks, when it isn't the owner."""
    sender = message.sender
    if sender is None:
        return message.text
    hops = f", {sender.hops} hop{'s' if sender.hops != 1 else ''} away" if sender.hops else ""
    return f"[A message from {sender.who}, not your owner{hops}]\n{message.text}"


@dataclass
class History:
    """A conversation's events, read once per step: what was said, answered and still open."""

    events: list[Numbered]

    @cached_property
    def messages(self) -> dict[int, MessageIn]:
        return {n: e for n, e in self.events if isinstance(e, MessageIn)}

    @cached_property
    def taken(self) -> set[int]:
        return {m for _, e in self.events if isinstance(e, Output) for m in e.took}

    @cached_property
    def answered(self) -> set[int]:
        return {m for _, e in self.events if isinstance(e, Answer) for m in e.messages}

    @property
    def last(self) -> int:
        return self.events[-1][0] if self.events else 0

    def unseen(self, limit: int | None = None) -> list[int]:
        """Messages the model was never shown, up to `limit`."""
        return [n for n in self.messages if n not in self.taken and (limit is None or n <= limit)]

    def unanswered(self, limit: int | None = None) -> list[int]:
        return [n for n in self.messages if n not in self.answered and (limit is None or n <= limit)]

    def since_answer(self) -> list[Numbered]:
        """The events after the last answer: the running (or interrupted) turn's."""
        last = max((n for n, e in self.events if isinstance(e, Answer)), default=0)
        return [(n, e) for n, e in self.events if n > last]

    def open_calls(self) -> list[tuple[Asked, bool]]:
        """Calls the model asked for that have no result, each with whether it was started."""
        results = {e.call for _, e in self.events if isinstance(e, Result)}
        made = {e.call for _, e in self.events if isinstance(e, CallMade)}
        return [
            (call, call.id in made)
            for _, e in self.events
            if isinstance(e, Output)
            for call in e.calls
            if call.id not in results
        ]

    def turn_text(self) -> str:
        texts = [e.text for _, e in self.since_answer() if isinstance(e, Output) and e.text]
        return STEP_BREAK.join(texts)

    @cached_property
    def keys(self) -> dict[str, int]:
        """Each message's key (Link-Message-Id), to the message kept under it."""
        return {e.key: n for n, e in self.messages.items() if e.key is not None}

    @cached_property
    def delivered(self) -> set[int]:
        """The answers known to have gone out whole (by their event's number)."""
        return {e.answer for _, e in self.events if isinstance(e, Delivered)}

    def answer_to(self, message: int) -> tuple[int, Answer] | None:
        """The answer (its event's number, and it) that answered `message`, once there is one."""
        return next(((n, e) for n, e in self.events if isinstance(e, Answer) and message in e.messages), None)

    def named(self, name: int) -> int | None:
        """The number of the answer event named `name` (answer_name)."""
        return next((n for n, e in self.events if isinstance(e, Answer) and answer_name(n, e) == name), None)

    @property
    def owners(self) -> bool:
        """Whose conversation: the owner's when its first message was the owner's."""
        first = next(iter(self.messages.values()), None)
        return first is None or first.sender is None

    def model_messages(self, show: list[int], budget: int = HISTORY_CHARS) -> list[dict[str, Any]]:
        """The conversation in OpenAI's message shape, with `show` (new messages) at the end.

        A message takes its place where the model first saw it (the output that `took` it), so
        a message that arrived mid-turn never lands between a tool call and its result. Of what
        came before the running turn, the newest `budget` characters go, from a message on.
        """
        out: list[dict[str, Any]] = []
        for _, event in self.events:
            if isinstance(event, Output):
                out += [{"role": "user", "content": speaker_line(self.messages[m])} for m in event.took]
                if not event.text and not event.calls:
                    continue  # a step cut before it said anything says nothing to the model either
                said: dict[str, Any] = {"role": "assistant", "content": event.text or None}
                if event.calls:
                    said["tool_calls"] = [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                        for c in event.calls
                    ]
                out.append(said)
            elif isinstance(event, Result):
                out.append({"role": "tool", "tool_call_id": event.call, "content": event.content})
        return window(out, budget) + [{"role": "user", "content": speaker_line(self.messages[m])} for m in show]


def answer_name(number: int, answer: Answer) -> int:
    """What names answer event `number` in its id: the message that started its turn, or for an
    answer an older harness wrote, its own number. Both are event numbers, so they never clash."""
    return answer.name if answer.name is not None else number


def window(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The newest messages within `budget` characters, starting at a user's message; the running
    turn's (from its last user message on) whatever their size."""
    users = [i for i, message in enumerate(messages) if message["role"] == "user"]
    if not users:
        return messages
    start, used = users[-1], 0
    for i in range(users[-1] - 1, -1, -1):
        used += len(json.dumps(messages[i], ensure_ascii=False))
        if used > budget:
            break
        if messages[i]["role"] == "user":
            start = i
    return messages[start:]


class Conversation:
    def __init__(self, chats: Path, thread: Thread, turns: Turns) -> None:
        self.thread = thread
        self.folder = chats / thread.folder
        self.events = EventLog(self.folder / "events")
        self.lease = TurnLease(self.folder, turns.lapse)
        self._grant = self.folder / "tools.json"
        self._outbox = self.folder / "outbox"
        self.transcript = Transcript(self.folder, thread, self.events)

    def history(self) -> History:
        return History(self.events.read())

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
            kept = self.history().keys.get(message.key)
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
        number = self.history().named(name)
        if number is not None:
            self.events.append(Delivered(answer=number, via=via))
        return True

    def render(self, agent: str) -> None:
        self.transcript.render(agent)


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
