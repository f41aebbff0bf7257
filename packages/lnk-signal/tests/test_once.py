"""Exactly once in the chat, where Signal differs: a message signal-cli hands over again is carried
once, and after the bridge restarted kept once by the harness and shown once (what every channel
shares of this is in test_scenarios.py)."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import OWNER
from test_bridge import Start

from link_plugin.bridge.shown import FILE
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.signal_cli import FakeSignal


def test_a_message_handed_over_again_is_carried_and_answered_once(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    sent = signal.dm(OWNER, "hello once")
    signal.wait(lambda: signal.texts(OWNER.number) == ["you said: hello once"])
    signal.replay(sent)
    time.sleep(0.5)
    assert [(r.key, r.text) for r in harness.received] == [(sent, "hello once")]
    assert signal.texts(OWNER.number) == ["you said: hello once"]


def test_a_message_handed_to_a_restarted_bridge_is_kept_and_shown_once(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start, folder: Path
) -> None:
    first = bridge()
    sent = signal.dm(OWNER, "hello once")
    signal.wait(lambda: signal.texts(OWNER.number) == ["you said: hello once"] and (folder / FILE).exists())
    first.stop()
    signal.wait(lambda: signal.connections == 0)
    bridge()
    signal.replay(sent)
    signal.wait(lambda: len(harness.received) == 2)
    time.sleep(0.5)
    assert [(r.key, r.repeat) for r in harness.received] == [(sent, False), (sent, True)]
    assert len(harness.messages) == 1, "kept once"
    assert signal.texts(OWNER.number) == ["you said: hello once"], "shown once"
