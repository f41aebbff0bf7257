"""No answer shown twice: the bridge notes each answer it showed by its id, on disk, before
anything confirms it, and a message sent again goes with the same key."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from test_bridge_carry import Bridge, Place, run, until

from link_plugin import wire
from link_plugin.bridge.shown import FILE, ShownAnswers
from lnk_testing.endpoint import Answer, ScriptedHarness


def test_an_answer_whose_harness_died_right_after_its_end_is_confirmed_not_shown_again(
    harness: ScriptedHarness, tmp_path: Path
) -> None:
    harness.script = lambda text: Answer(["the whole ", "answer"], undelivered=True)
    bridge = Bridge(harness.ref, folder=tmp_path)
    place = bridge.place("1")

    async def main() -> None:
        await bridge.carrier.carry("1", "a question", place, key="1:100")
        (kept,) = harness.kept  # it never noted the answer delivered: recovery hands it over
        assert kept.id == harness.answer_of(harness.received[0])
        recovery = asyncio.create_task(bridge.recovery.run())
        await until(lambda: harness.confirmed == [kept.id])
        recovery.cancel()

    run(main)
    assert place.finals == ["the whole answer"]
    assert harness.kept == []


class Losing(Place):
    """A chat that shows the answer, then the harness goes before the bridge can confirm it."""

    def __init__(self, harness: ScriptedHarness) -> None:
        super().__init__()
        self.harness = harness

    async def send(self, text: str) -> str:
        sent = await super().send(text)
        await asyncio.to_thread(self.harness.stop)
        return sent


def test_a_bridge_restarted_between_showing_and_confirming_does_not_show_it_again(
    harness: ScriptedHarness, tmp_path: Path
) -> None:
    kept = harness.keep("chat:2", "finished while nobody waited")
    first = Bridge(harness.ref, folder=tmp_path)
    first.places["2"] = Losing(harness)

    async def before() -> None:
        recovery = asyncio.create_task(first.recovery.run())
        await until(lambda: first.places["2"].finals and any("can't be reached" in line for line in first.log))
        recovery.cancel()

    run(before)
    assert harness.confirmed == [], "the bridge went before it confirmed"
    harness.start()
    again = Bridge(harness.ref, folder=tmp_path)

    async def after() -> None:
        recovery = asyncio.create_task(again.recovery.run())
        await until(lambda: harness.confirmed == [kept])
        recovery.cancel()

    run(after)
    assert first.places["2"].finals == ["finished while nobody waited"]
    assert again.places == {}, "confirmed, not shown again"


@pytest.mark.parametrize("kept_at_once", [True, False], ids=["recovered-too", "streamed-again"])
def test_a_message_dropped_before_any_byte_goes_again_with_its_key_and_is_kept_and_shown_once(
    harness: ScriptedHarness, tmp_path: Path, kept_at_once: bool
) -> None:
    harness.script = lambda text: Answer(["kept ", "once"], dropped=True, kept_at_once=kept_at_once)
    bridge = Bridge(harness.ref, folder=tmp_path)
    place = bridge.place("4")

    async def main() -> None:
        recovery = asyncio.create_task(bridge.recovery.run())
        await until(lambda: harness.recovers >= 1)
        await bridge.carrier.carry("4", "only once, please", place, key="4:1")
        await until(lambda: harness.kept == [] and place.finals)
        await asyncio.sleep(0.2)
        recovery.cancel()

    run(main)
    assert [(r.key, r.repeat) for r in harness.received] == [("4:1", False), ("4:1", True)]
    assert [m.text for m in harness.messages] == ["only once, please"]
    assert place.finals == ["kept once"]


def test_a_message_handed_over_again_after_the_bridge_restarted_is_not_answered_twice(
    harness: ScriptedHarness, tmp_path: Path
) -> None:
    """Telegram hands an update over again when the bridge died before it moved past it."""
    first = Bridge(harness.ref, folder=tmp_path)
    run(lambda: first.carrier.carry("5", "hello", first.place("5"), key="5:77"))
    again = Bridge(harness.ref, folder=tmp_path)
    run(lambda: again.carrier.carry("5", "hello", again.place("5"), key="5:77"))
    assert first.place("5").finals == ["you said: hello"]
    assert again.place("5").finals == []
    assert [r.repeat for r in harness.received] == [False, True]
    assert any("was shown before" in line for line in again.log)


def test_an_older_endpoint_that_names_no_answer_is_carried_as_before(tmp_path: Path) -> None:
    older = ScriptedHarness(wire.new_endpoint_key(), keys=False).start()
    try:
        dropped = Answer(["lost"], dropped=True, kept_at_once=False)
        older.script = lambda text: dropped if len(older.received) == 1 else Answer(["ok"])
        bridge = Bridge(older.ref, folder=tmp_path)

        async def main() -> None:
            recovery = asyncio.create_task(bridge.recovery.run())
            await bridge.carrier.carry("6", "hi", bridge.place("6"), key="6:1")
            recovery.cancel()

        run(main)
    finally:
        older.stop()
    assert bridge.place("6").finals == ["ok"]
    assert [r.headers["link-message-id"] for r in older.received] == ["6:1", "6:1"], "the same key, read or not"
    assert not (tmp_path / FILE).exists(), "nothing to note without an answer id"


def test_a_key_that_is_no_message_id_is_a_mistake_of_the_channel(harness: ScriptedHarness) -> None:
    bridge = Bridge(harness.ref)
    with pytest.raises(wire.WireError, match="Link-Message-Id"):
        run(lambda: bridge.carrier.carry("7", "hi", bridge.place("7"), key="not a key"))
    assert harness.received == []


def test_the_record_holds_the_last_ids_and_survives_a_restart(tmp_path: Path) -> None:
    async def main() -> None:
        shown = ShownAnswers(tmp_path / FILE, print, keep=3)
        for number in range(5):
            assert await shown.claim(f"chat:1/{number}")
            await shown.add(f"chat:1/{number}")

    asyncio.run(main())
    assert json.loads((tmp_path / FILE).read_text())["shown"] == ["chat:1/2", "chat:1/3", "chat:1/4"]
    again = ShownAnswers(tmp_path / FILE, print, keep=3)
    assert "chat:1/4" in again and "chat:1/1" not in again


def test_a_record_that_cant_be_read_is_said_and_started_afresh(harness: ScriptedHarness, tmp_path: Path) -> None:
    (tmp_path / FILE).write_text('{"shown": [1, 2')
    bridge = Bridge(harness.ref, folder=tmp_path)
    assert any("can't be read" in line and "starting afresh" in line for line in bridge.log)
    run(lambda: bridge.carrier.carry("8", "still here?", bridge.place("8"), key="8:1"))
    assert bridge.place("8").finals == ["you said: still here?"]
    assert json.loads((tmp_path / FILE).read_text()) == {"shown": [harness.answer_of(harness.received[0])]}


def test_the_same_answer_coming_two_ways_at_once_is_shown_by_one(tmp_path: Path) -> None:
    async def main() -> list[str]:
        shown = ShownAnswers(tmp_path / FILE, print)
        showing: list[str] = []

        async def show(way: str) -> None:
            if await shown.claim("chat:9/1"):
                await asyncio.sleep(0.05)
                showing.append(way)
                await shown.add("chat:9/1")

        await asyncio.gather(show("recovered"), show("streamed again"))
        return showing

    assert asyncio.run(main()) == ["recovered"]


def test_an_answer_not_shown_after_all_is_left_to_the_other_way(tmp_path: Path) -> None:
    async def main() -> bool:
        shown = ShownAnswers(tmp_path / FILE, print)
        assert await shown.claim("chat:9/2")
        waiting = asyncio.create_task(shown.claim("chat:9/2"))
        await asyncio.sleep(0.05)
        assert not waiting.done(), "it waits while the first way shows it"
        shown.release("chat:9/2")  # the chat couldn't take it
        return await waiting

    assert asyncio.run(main()), "the other way shows it"
