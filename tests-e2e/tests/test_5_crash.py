"""5. The harness is killed (SIGKILL): the supervisor starts it again, it finishes the turn it was
in, and the bridge recovers the answer; the phone sees each answer exactly once.

First once in the middle of an answer, as a person would notice it; then again and again at points
drawn at random (`LNK_E2E_SEED` replays a draw, `LNK_E2E_KILLS` sets how many: ten unless set, fifty
for the whole run), each right at an edge where a message could be kept twice or an answer lost or
shown twice; last the bridge, whose recovery as it starts confirms what it read whole unrecorded.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import AGENT, OWNER

from lnk_e2e.conversation import Conversation
from lnk_e2e.harness import Harness
from lnk_e2e.machine import Machine
from lnk_e2e.model import PACE, STORY, Model, Pace
from lnk_e2e.phone import Phone
from lnk_e2e.processes import Process
from lnk_e2e.strike import Strike
from lnk_e2e.waiting import wait_for

INTERRUPTED = "(The agent stopped before it finished; its answer will follow when it's back.)"


def test_a_harness_killed_mid_answer_comes_back_and_the_answer_arrives_once(
    machine: Machine, owner: Phone, model: Model
) -> None:
    before = machine.status(AGENT)["process"]
    with Harness(machine, AGENT) as watching:
        harness = watching.process()
    assert harness is not None, "no harness runs under the agent's supervisor"
    shown, answers = len(owner.messages()), len(model.answers)
    model.slow.set()
    model.expect(2)  # the answer the kill cuts short, then the same turn finished after the restart
    owner.send("Tell me a story")
    assert model.answer(answers) == STORY

    def partly_shown() -> bool:
        return any(m.text and STORY.startswith(m.text) and m.text != STORY for m in owner.messages()[shown:])

    wait_for(partly_shown, 60, "the story's first words on the phone")
    os.kill(harness.pid, signal.SIGKILL)

    def restarted(status: dict[str, Any]) -> bool:
        process = status["process"]
        return bool(process["restarts"] > before["restarts"] and process["state"] == "running")

    machine.status_when(AGENT, restarted, 60, "the supervisor starting the harness again")
    owner.wait_for_message(STORY, timeout=90)
    outbox = machine.folder(AGENT) / "chats" / f"telegram:{OWNER.id}" / "outbox"
    wait_for(lambda: not any(outbox.glob("*")), 60, "the bridge confirming the recovered answer")

    cut_short, *rest = owner.messages()[shown:]
    assert cut_short.text.endswith(INTERRUPTED) and STORY not in cut_short.text
    assert [m.text for m in rest] == [STORY]
    assert len(model.answers) == answers + 2


# --- killed fifty times, at random edges ------------------------------------------------------

EDGES = {
    "kept": "right after the harness kept the message, before any word of its answer",
    "streaming": "at a random instant while the answer streams",
    "tool": "right after the harness began a tool call (memory's search)",
    "answered": "right after the harness wrote the whole answer, before its end went out",
    "done": "right after the answer's end (data: [DONE]) went out to the bridge",
}
STRIKE_AT: dict[str, tuple[str, dict[str, object]]] = {
    "kept": ("message", {}),
    "tool": ("call", {}),
    "answered": ("answer", {"waited": True}),
    "done": ("delivered", {"via": "request"}),
}
"""The event whose naming each edge kills at (not an older answer's, finished or confirmed by a
recovery meanwhile); "streaming" kills at a drawn time instead."""
FAST = Pace(chunks=8, delay=0.15)
"""Answers stream for about a second: long enough to be killed in, short enough for fifty rounds."""
WORDS = ["amber", "basil", "cedar", "dune", "ember", "fjord", "garnet", "heron", "iris", "kelp", "moss", "opal"]


@dataclass
class Round:
    number: int
    edge: str
    text: str
    killed: float = 0.0
    back: float = 0.0
    """Seconds from the kill to the harness answering again."""
    settled: float = 0.0
    """Seconds from the kill to the answer shown, written down as delivered, and nothing left to confirm."""
    answer: str = ""
    via: tuple[str, ...] = ()
    """How the harness wrote the answer down as delivered: on its request, or confirmed by recovery."""
    unrecorded: bool = False
    """The bridge read the answer's end and showed it whole, but the harness died before it wrote
    that down: the answer waits in the outbox until the bridge next asks recovery, which confirms it
    without showing it again (the bridge asks when it starts or finds the endpoint lost, never on a
    timer, and it lost nothing here)."""
    shown: tuple[str, ...] = ()
    """What the phone showed in the round."""

    @property
    def cut_short(self) -> bool:
        return any(text.endswith(INTERRUPTED) for text in self.shown)

    @property
    def confirmed_unseen(self) -> bool:
        """The bridge read the answer's end, the harness died before it wrote that down, and recovery
        handed the answer over again: confirmed without being shown again."""
        return self.via == ("recover",) and not self.cut_short

    def said(self) -> str:
        how = "+".join(self.via) or ("shown whole, waiting for recovery" if self.unrecorded else "")
        how += ", cut short first" if self.cut_short else ""
        return f"round {self.number} ({self.edge}): back {self.back:.1f} s, settled {self.settled:.1f} s, via {how}"


@pytest.fixture
def seed() -> Iterator[int]:
    chosen = int(os.environ.get("LNK_E2E_SEED") or random.randrange(2**32))
    print(f"killing at random edges with seed {chosen} (LNK_E2E_SEED={chosen} draws the same again)")
    yield chosen


def _draw(rng: random.Random, kills: int) -> list[Round]:
    """`kills` rounds, each edge as often as the others (the rest drawn), in a drawn order."""
    edges = [edge for edge in EDGES for _ in range(kills // len(EDGES))]
    edges += rng.sample(sorted(EDGES), kills - len(edges))
    rng.shuffle(edges)
    rounds = []
    for number, edge in enumerate(edges, start=1):
        if edge == "tool":
            text = f"Round {number}: look up the {rng.choice(WORDS)} notes"
        else:
            text = f"Round {number}: say back, word for word, " + " ".join(rng.sample(WORDS, 8))
        rounds.append(Round(number, edge, text))
    return rounds


@dataclass
class Killing:
    """What a round acts on and watches."""

    owner: Phone
    model: Model
    conversation: Conversation
    harness: Harness
    strike: Strike
    rng: random.Random
    asked_first: list[str] = field(default_factory=list)
    """The answers to what the owner said before a tool round, for the harness to list its tools."""

    def round(self, at: Round) -> None:
        """Send the round's message, kill the harness at its edge, and wait until everything
        settled: the harness back, the answer on the phone, delivered, nothing left to confirm."""
        harness = wait_for(self.harness.process, 60, "the harness running in its sandbox")
        if at.edge == "tool":
            self._tools_listed(at)
        requests = len(self.model.requests)
        self.model.expect(3)  # at most: a tool call, a step cut short by the kill, the answer

        def kill() -> None:
            with suppress(ProcessLookupError):
                os.kill(harness.pid, signal.SIGKILL)
            at.killed = time.monotonic()

        if at.edge in STRIKE_AT:
            kind, fields = STRIKE_AT[at.edge]
            self.strike.arm(kind, kill, **fields)
        shown = len(self.owner.messages())
        self.owner.send(at.text)
        if at.edge == "streaming":
            wait_for(lambda: self._asked(at, requests), 60, f"round {at.number}: the model asked")
            time.sleep(self.rng.uniform(0, FAST.seconds))  # a drawn instant of the stream, not a wait
            kill()
        else:
            kind = STRIKE_AT[at.edge][0]
            wait_for(self.strike.struck.is_set, 60, f"round {at.number}: the harness writing its {kind}")
        wait_for(lambda: self.harness.back(harness.pid), 120, f"round {at.number}: the harness started again")
        at.back = time.monotonic() - at.killed

        def settled() -> bool:
            at.shown = tuple(m.text for m in self.owner.messages()[shown:])
            kept = self.conversation.kept(at.text)
            assert len(kept) <= 1, f"{at.said()}: the message was kept {len(kept)} times"
            answered = self.conversation.answers(kept[0]) if kept else []
            assert len(answered) <= 1, f"{at.said()}: the message was answered {len(answered)} times"
            if not answered:
                return False
            number, answer = answered[0]
            at.answer, at.via = answer["text"], tuple(self.conversation.deliveries(number))
            waiting = self.conversation.waiting(number)
            at.unrecorded = not at.via and waiting and at.shown == (at.answer,)
            if at.answer not in at.shown:
                return False
            return (bool(at.via) and not waiting) or at.unrecorded

        def unsettled() -> str:
            kept = self.conversation.kept(at.text)
            found = self.conversation.since(kept[0]) if kept else "  the message was never kept"
            return f"{at.said()}: the answer shown, delivered and confirmed (shown {at.shown}; since:\n{found}\n)"

        wait_for(settled, 180, unsettled)
        at.settled = time.monotonic() - at.killed
        print(at.said(), flush=True)

    def _tools_listed(self, at: Round) -> None:
        """The owner says something until the model is offered memory's search. The harness lists its
        tools when a turn first needs them and its first turn after a start goes to the model without
        them (they come at the next turn): right after a kill, unless a recovered turn listed them,
        a tool round would be answered "I have no search tool here" and no call would be struck."""
        deadline = time.monotonic() + 60
        for attempt in itertools.count(1):
            said = self.owner.ask(self.model, f"Before round {at.number} ({attempt}): are your tools there?", 1)
            self.asked_first.append(said.answer)
            if "search" in said.asked[0].tool_names:
                return
            assert time.monotonic() < deadline, f"round {at.number}: the model was offered no search within 60 s"

    def _asked(self, at: Round, since: int) -> bool:
        return any(at.text in request.text for request in self.model.requests[since:])

    def bridge_restarted(self, machine: Machine, rounds: list[Round]) -> None:
        """Kill the bridge (SIGKILL): as the supervisor starts it again it asks recovery, which hands
        over every answer still waiting; each was shown already, so it is confirmed, not shown again."""
        bridge = wait_for(lambda: machine.bridge("telegram"), 60, "the Telegram bridge running")
        os.kill(bridge.pid, signal.SIGKILL)

        def again() -> Process | None:
            found = machine.bridge("telegram")
            return found if found is not None and found.pid != bridge.pid else None

        wait_for(again, 120, "the bridge started again")
        wait_for(
            lambda: not self.conversation.outbox(), 60, lambda: f"the outbox emptied: {self.conversation.outbox()}"
        )
        for at in rounds:
            kept = self.conversation.kept(at.text)
            at.via = tuple(self.conversation.deliveries(self.conversation.answers(kept[0])[0][0]))


KILLS = 10
"""Kills unless `LNK_E2E_KILLS` says: two at each edge, about a minute and a half, which keeps the
suite short; the whole run, fifty, takes about six minutes on two busy cores."""


@pytest.mark.timeout(1800)
def test_killed_at_random_edges_each_message_is_kept_answered_and_shown_once(
    machine: Machine, owner: Phone, model: Model, seed: int
) -> None:
    kills = int(os.environ.get("LNK_E2E_KILLS") or KILLS)
    rng = random.Random(seed)
    replay = f"(seed {seed}: LNK_E2E_SEED={seed} replays this draw)"
    conversation = Conversation(machine.folder(AGENT) / "chats" / f"telegram:{OWNER.id}")
    restarts = machine.status(AGENT)["process"]["restarts"]
    shown_before = len(owner.messages())
    rounds = _draw(rng, kills)
    model.pace = FAST
    strike = Strike(conversation.events_folder).start()
    started = time.monotonic()
    try:
        with Harness(machine, AGENT) as harness:
            killing = Killing(owner, model, conversation, harness, strike, rng)
            for at in rounds:
                killing.round(at)
            killing.bridge_restarted(machine, rounds)
    except AssertionError as failed:
        raise AssertionError(f"{failed} {replay}") from failed
    finally:
        strike.stop()
        model.pace = PACE
    took = time.monotonic() - started

    shown = [m.text for m in owner.messages()[shown_before:]]
    answers = {at.answer for at in rounds}
    for at in rounds:
        kept = conversation.kept(at.text)
        assert len(kept) == 1, f"round {at.number} ({at.edge}): the message was kept {len(kept)} times {replay}"
        answered = conversation.answers(kept[0])
        assert len(answered) == 1, f"round {at.number} ({at.edge}): {len(answered)} answers {replay}"
        number, answer = answered[0]
        assert answer["error"] is None and answer["text"] == at.answer, f"round {at.number}: {answer} {replay}"
        via = conversation.deliveries(number)
        assert len(via) == 1, f"round {at.number} ({at.edge}): written down as delivered {via} {replay}"
        count = shown.count(at.answer)
        assert count == 1, f"round {at.number} ({at.edge}): the answer was shown {count} times {replay}"
    # Everything else the phone showed is an answer cut short, saying it will follow (or one to what
    # the owner said before a tool round).
    for text in shown:
        if text in answers or text in killing.asked_first:
            continue
        assert text.endswith(INTERRUPTED), f"the phone showed {text!r} {replay}"
        start = text.removesuffix(INTERRUPTED).rstrip()
        assert any(a.startswith(start) for a in answers), f"{text!r} is no answer's beginning {replay}"
    assert not conversation.outbox(), f"answers left undelivered: {conversation.outbox()} {replay}"
    assert machine.status(AGENT)["process"]["restarts"] == restarts + kills
    print(_summary(rounds, took))


def _summary(rounds: list[Round], took: float) -> str:
    lines = [f"{len(rounds)} kills in {took:.0f} s ({took / len(rounds):.1f} s a round)"]
    for edge, meaning in EDGES.items():
        mine = [r for r in rounds if r.edge == edge]
        if not mine:
            continue
        ways = Counter("+".join(r.via) for r in mine)
        back, settled = statistics.median(r.back for r in mine), statistics.median(r.settled for r in mine)
        lines.append(
            f"  {edge} ({meaning}): {len(mine)} kills; harness back in {back:.1f} s, settled in {settled:.1f} s "
            "(medians); "
            f"delivered via {', '.join(f'{way} x{n}' for way, n in sorted(ways.items()))}; "
            f"{sum(r.cut_short for r in mine)} cut short on the phone; "
            f"{sum(r.confirmed_unseen for r in mine)} read whole by the bridge, recovered and not shown again "
            f"({sum(r.unrecorded for r in mine)} of them left waiting for a later recovery)"
        )
    return "\n".join(lines)
