"""Exactly once in the chat: an answer is shown once, whoever died when (the harness right after
its answer's end, the bridge between showing and confirming, the bridge before it moved past an
update), and a message sent again goes with its key, so the harness keeps it once."""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import OWNER
from test_bridge import Start

from link_plugin.bridge.shown import FILE
from lnk_testing.endpoint import Answer, ScriptedHarness
from lnk_testing.telegram import FakeTelegram


def test_an_answer_whose_harness_died_right_after_its_end_is_shown_once(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    harness.script = lambda text: Answer(["answer to ", text], undelivered=text == "first")
    bridge()
    telegram.private(OWNER, "first")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["answer to first"] and harness.kept)
    (undelivered,) = harness.kept  # the harness died before it noted the answer delivered
    harness.stop()
    typed = len(telegram.called("sendChatAction"))
    telegram.private(OWNER, "second")  # finds it gone: recovery asks once it is back
    telegram.wait(lambda: len(telegram.called("sendChatAction")) > typed)
    time.sleep(0.5)  # the bridge found nothing listening and holds the message
    harness.start()
    telegram.wait(lambda: harness.confirmed == [undelivered.id])
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["answer to first", "answer to second"])
    assert [r.text for r in harness.messages] == ["first", "second"]


def test_a_bridge_restarted_between_showing_and_confirming_shows_the_answer_once(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start, folder: Path
) -> None:
    kept = harness.keep(f"telegram:{OWNER.id}", "finished while nobody waited")
    telegram.meet(OWNER)
    telegram.lose("sendMessage", delay=2)  # it lands at once; the bridge hears so 2 s later
    first = bridge(timeout=10.0)
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["finished while nobody waited"])
    harness.stop()  # so the confirm can't reach it
    telegram.wait(lambda: (folder / FILE).exists() and kept in json.loads((folder / FILE).read_text())["shown"])
    first.stop()
    assert harness.confirmed == []
    harness.start()
    bridge()
    telegram.wait(lambda: harness.confirmed == [kept])
    assert telegram.texts(OWNER.id) == ["finished while nobody waited"]
    assert len(telegram.called("sendMessage")) == 1


def test_an_update_handed_over_again_after_the_bridge_died_is_answered_once(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start, folder: Path
) -> None:
    first = bridge()
    telegram.wait(lambda: telegram.called("getUpdates"))
    telegram.fail("getUpdates", times=1000)  # the poll that would move past the update never lands
    sent = telegram.private(OWNER, "hello once")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: hello once"] and (folder / FILE).exists())
    first.stop()
    assert telegram.pending == 1, "Telegram still holds the update"
    telegram.heal("getUpdates")
    bridge()
    telegram.wait(lambda: telegram.pending == 0 and len(harness.received) == 2)
    assert [(r.key, r.repeat) for r in harness.received] == [
        (f"{OWNER.id}:{sent}", False),
        (f"{OWNER.id}:{sent}", True),
    ]
    assert len(harness.messages) == 1, "kept once"
    assert telegram.texts(OWNER.id) == ["you said: hello once"], "shown once"


def test_a_harness_dying_before_any_byte_gets_the_message_again_with_its_key(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    harness.script = lambda text: Answer(["answered ", "once"], dropped=True)
    bridge()
    telegram.wait(lambda: harness.recovers >= 1)
    telegram.private(OWNER, "keep me once")
    telegram.wait(lambda: len(harness.received) == 2 and harness.kept == [])
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["answered once"])
    first, again = harness.received
    assert first.key == again.key and again.repeat
    assert [r.text for r in harness.messages] == ["keep me once"]
    assert len(telegram.messages(OWNER.id)) == 1
