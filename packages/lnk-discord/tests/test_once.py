"""Exactly once in the chat, where Discord differs: an event the Gateway replays is carried once,
and after the bridge restarted kept once by the harness and shown once (what every channel shares
of this is in test_scenarios.py)."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import OWNER
from test_bridge import Start

from link_plugin.bridge.shown import FILE
from lnk_testing.discord import FakeDiscord
from lnk_testing.endpoint import ScriptedHarness


def test_an_event_the_gateway_replays_is_carried_and_answered_once(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    sent = discord.dm(OWNER, "hello once")
    discord.wait(lambda: discord.texts(OWNER.dm) == ["you said: hello once"])
    discord.replay(sent)  # as to a session resuming from before it
    time.sleep(0.5)
    assert [(r.key, r.text) for r in harness.received] == [(str(sent), "hello once")]
    assert discord.texts(OWNER.dm) == ["you said: hello once"]


def test_an_event_replayed_to_a_restarted_bridge_is_kept_and_shown_once(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start, folder: Path
) -> None:
    first = bridge()
    sent = discord.dm(OWNER, "hello once")
    discord.wait(lambda: discord.texts(OWNER.dm) == ["you said: hello once"] and (folder / FILE).exists())
    first.stop()
    discord.wait(lambda: discord.connections == 0)
    bridge()
    discord.replay(sent)
    discord.wait(lambda: len(harness.received) == 2)
    time.sleep(0.5)
    assert [(r.key, r.repeat) for r in harness.received] == [(str(sent), False), (str(sent), True)]
    assert len(harness.messages) == 1, "kept once"
    assert discord.texts(OWNER.dm) == ["you said: hello once"], "shown once"
