"""Carrying a message to a harness endpoint and back, and recovering what finished unseen."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from test_bridge_answer import Chat

from link_plugin import wire
from link_plugin.bridge.carry import INTERRUPTED, UNREACHABLE, Carrier, Pace
from link_plugin.bridge.recovery import Recovery
from link_plugin.bridge.shown import ShownAnswers
from link_plugin.channel import EndpointRef
from link_plugin.endpoint import EndpointClient
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness

PACE = Pace(interval=0.02, typing=0.05, hold=5.0, give_up=5.0)


@dataclass
class Place(Chat):
    typed: int = 0
    marks: list[str] = field(default_factory=list)

    async def typing(self) -> None:
        self.typed += 1

    async def mark(self, mark: str) -> None:
        self.marks.append(mark)


class Bridge:
    """The shared parts wired as a channel's bridge wires them, delivering recovered answers to `places`."""

    def __init__(
        self,
        endpoint: EndpointRef,
        *,
        steered: str | None = None,
        pace: Pace = PACE,
        folder: Path | None = None,
        settle: float = 0.3,
    ) -> None:
        self.places: dict[str, Place] = {}
        self.log: list[str] = []
        self.failing: set[str] = set()
        client = EndpointClient(endpoint, AGENT)
        shown = ShownAnswers.in_folder(str(folder) if folder else None, self.log.append)
        self.recovery = Recovery(client, "chat", self._deliver, self.log.append, shown=shown, probe=0.05, settle=settle)
        self.carrier = Carrier(client, self.recovery, "chat", self.log.append, limit=100, steered=steered, pace=pace)

    def place(self, chat: str) -> Place:
        return self.places.setdefault(chat, Place())

    async def _deliver(self, chat: str, text: str) -> None:
        if chat in self.failing:
            raise ConnectionError("the channel is down")
        await self.carrier.deliver(self.place(chat), text)


async def until(condition: Callable[[], object], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.01)


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), 20))


def test_a_message_is_carried_and_answered_with_typing(harness: ScriptedHarness) -> None:
    bridge = Bridge(harness.ref)

    async def main() -> None:
        await bridge.carrier.carry("42", "hello", bridge.place("42"), key="m1")

    run(main)
    assert bridge.place("42").finals == ["you said: hello"]
    assert bridge.place("42").typed >= 1
    assert harness.received[0].thread == "chat:42"


def test_messages_to_one_conversation_go_in_order_and_a_steer_is_marked(harness: ScriptedHarness) -> None:
    hold = threading.Event()
    harness.script = lambda text: Answer(["on ", text], hold=hold if text == "first" else None)
    bridge = Bridge(harness.ref, steered="✍")
    place = bridge.place("7")

    async def main() -> None:
        first = asyncio.create_task(bridge.carrier.carry("7", "first", place, key="m2"))
        await until(lambda: len(harness.received) == 1)
        second = asyncio.create_task(bridge.carrier.carry("7", "second", Place(), key="m3"))
        await until(lambda: len(harness.received) == 2)
        hold.set()
        await asyncio.gather(first, second)

    run(main)
    assert [r.text for r in harness.received] == ["first", "second"]
    assert harness.received[1].steered
    assert place.finals == ["on first (and: second)"]


def test_the_steered_mark_is_put_on_the_steering_message(harness: ScriptedHarness) -> None:
    hold = threading.Event()
    harness.script = lambda text: Answer([text], hold=hold if text == "first" else None)
    bridge = Bridge(harness.ref, steered="✍")
    steering = Place()

    async def main() -> None:
        first = asyncio.create_task(bridge.carrier.carry("7", "first", Place(), key="m4"))
        await until(lambda: len(harness.received) == 1)
        await bridge.carrier.carry("7", "second", steering, key="m5")
        hold.set()
        await first

    run(main)
    assert steering.marks == ["✍"] and steering.messages == {}


def test_an_unreachable_endpoint_holds_the_message_until_it_is_back(harness: ScriptedHarness) -> None:
    bridge = Bridge(harness.ref)
    harness.stop()
    place = bridge.place("1")

    async def main() -> None:
        recovery = asyncio.create_task(bridge.recovery.run())
        carried = asyncio.create_task(bridge.carrier.carry("1", "wait for me", place, key="m6"))
        await asyncio.sleep(0.3)
        harness.keep("chat:1", "what finished while it was away")
        await asyncio.to_thread(harness.start)
        await carried
        await until(lambda: len(place.finals) == 2)
        recovery.cancel()

    run(main)
    assert sorted(place.finals) == ["what finished while it was away", "you said: wait for me"]
    assert [r.text for r in harness.received] == ["wait for me"]


def test_the_owner_is_told_when_the_endpoint_stays_away(harness: ScriptedHarness) -> None:
    bridge = Bridge(harness.ref, pace=Pace(interval=0.02, hold=0.3))
    harness.stop()

    async def main() -> None:
        await bridge.carrier.carry("1", "anyone?", bridge.place("1"), key="m7")

    run(main)
    assert bridge.place("1").finals == [UNREACHABLE]


def test_a_refusal_is_told_not_hidden(harness: ScriptedHarness) -> None:
    bridge = Bridge(EndpointRef(url=harness.url, key="not-the-key", proof=False))

    async def main() -> None:
        await bridge.carrier.carry("1", "hello", bridge.place("1"), key="m8")

    run(main)
    told = " ".join(bridge.place("1").finals)
    assert "refused" in told and "401" in told


def test_a_recovery_round_that_fails_unforeseen_is_asked_again(harness: ScriptedHarness) -> None:
    mine = harness.keep("chat:5", "late")
    bridge = Bridge(harness.ref)
    client = bridge.recovery._client
    asked = client.recover
    failures = [RuntimeError("something nobody foresaw")]

    async def failing_once() -> list[wire.Undelivered]:
        if failures:
            raise failures.pop()
        return await asked()

    client.recover = failing_once  # type: ignore[method-assign]

    async def main() -> None:
        recovery = asyncio.create_task(bridge.recovery.run())
        await until(lambda: harness.confirmed == [mine])
        recovery.cancel()

    run(main)
    assert bridge.place("5").finals == ["late"]
    assert "a round failed (RuntimeError: something nobody foresaw)" in bridge.log[0]


def test_recovery_delivers_its_channels_answers_and_confirms_each(harness: ScriptedHarness) -> None:
    mine = harness.keep("chat:5", "late")
    other = harness.keep("slack:D1", "not mine")
    failing = harness.keep("chat:6", "chat 6 is down")
    bridge = Bridge(harness.ref)
    bridge.failing.add("6")

    async def main() -> None:
        recovery = asyncio.create_task(bridge.recovery.run())
        await until(lambda: bridge.log)
        assert harness.confirmed == [mine]
        bridge.failing.clear()
        bridge.recovery.lost()
        await until(lambda: harness.confirmed == [mine, failing])
        recovery.cancel()

    run(main)
    assert bridge.place("5").finals == ["late"]
    assert bridge.place("6").finals == ["chat 6 is down"], "an answer that couldn't go is handed over again"
    assert [a.id for a in harness.kept] == [other]
    assert "couldn't be delivered" in bridge.log[0]


def test_an_answer_that_broke_off_is_asked_for_until_it_comes(harness: ScriptedHarness) -> None:
    """The restarted harness answers before it finished the dead one's turn: the answer comes later.
    An older answer of the same chat, shown whole before its harness noted it, comes first: it is
    confirmed unshown, and the owed one is still asked for."""
    harness.script = lambda text: Answer(["once upon ", "a time"], crash_after=1, kept_at_once=False)
    bridge = Bridge(harness.ref)
    place = bridge.place("3")

    async def main() -> None:
        recovery = asyncio.create_task(bridge.recovery.run())
        await until(lambda: harness.recovers >= 1)
        await asyncio.sleep(0.4)  # past the few seconds recovery is asked after the bridge started
        await bridge.carrier.carry("3", "a story", place, key="m9")
        older = harness.keep("chat:3", "an older answer")
        await bridge.recovery.shown.add(older)
        await until(lambda: older in harness.confirmed)
        await asyncio.sleep(0.4)  # past the few seconds recovery is asked after the endpoint came back
        before = harness.recovers
        await until(lambda: harness.recovers >= before + 3)  # asked again and again, with nothing there yet
        harness.finish_broken("chat:3")
        await until(lambda: len(place.finals) == 2)
        await asyncio.sleep(0.4)  # past the few seconds recovery is asked after the endpoint came back
        asked = harness.recovers
        await asyncio.sleep(0.3)
        assert harness.recovers == asked, "once the owed answer came, recovery waits for the next loss"
        recovery.cancel()

    run(main)
    assert place.finals[0].endswith(INTERRUPTED)
    assert place.finals[1] == "once upon a time"


def test_what_a_restarted_harness_keeps_just_after_it_is_back_is_delivered(harness: ScriptedHarness) -> None:
    """It finishes what its dead self left as it takes each conversation again: maybe after the
    first round."""
    bridge = Bridge(harness.ref, settle=2.0)
    harness.stop()

    async def main() -> None:
        recovery = asyncio.create_task(bridge.recovery.run())
        bridge.recovery.lost()
        await asyncio.to_thread(harness.start)
        await until(lambda: harness.recovers >= 1)
        harness.keep("chat:2", "finished after the first round")
        await until(lambda: bridge.place("2").finals == ["finished after the first round"])
        await asyncio.sleep(2.2)
        asked = harness.recovers
        await asyncio.sleep(0.3)
        assert harness.recovers == asked, "then recovery waits for the next loss"
        recovery.cancel()

    run(main)
    assert harness.kept == []


def test_recovery_waits_for_an_endpoint_that_is_not_up_yet(harness: ScriptedHarness) -> None:
    harness.stop()
    harness.keep("chat:9", "kept across the restart")
    bridge = Bridge(harness.ref)

    async def main() -> None:
        recovery = asyncio.create_task(bridge.recovery.run())
        await asyncio.sleep(0.2)
        assert bridge.recovery.rounds == 0
        await asyncio.to_thread(harness.start)
        await until(lambda: bridge.place("9").finals == ["kept across the restart"])
        await asyncio.sleep(0.4)  # asked again for a while after it came back: delivered once still
        recovery.cancel()

    run(main)
    assert bridge.place("9").finals == ["kept across the restart"]
    assert harness.confirmed == [harness.confirmed[0]]


def test_a_message_handed_over_again_while_the_bridge_runs_is_carried_once(harness: ScriptedHarness) -> None:
    bridge = Bridge(harness.ref)
    place = bridge.place("9")

    async def main() -> None:
        await bridge.carrier.carry("9", "once", place, key="9:100")
        await bridge.carrier.carry("9", "once", place, key="9:100")
        await bridge.carrier.carry("9", "twice", place, key="9:101")

    run(main)
    assert [r.text for r in harness.received] == ["once", "twice"]
    assert place.finals == ["you said: once", "you said: twice"]
    assert any("came again" in line for line in bridge.log)
