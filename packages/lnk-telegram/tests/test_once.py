"""Exactly once in the chat, where Telegram's long poll differs: an update handed over again after
the bridge died is kept once by the harness and shown once (what every channel shares of this is
in test_scenarios.py)."""

from __future__ import annotations

from pathlib import Path

from conftest import OWNER
from test_bridge import Start

from link_plugin.bridge.shown import FILE
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.telegram import FakeTelegram


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
