"""Exactly once in the chat, where Slack differs: an envelope Slack sends again is carried once,
and after the bridge restarted kept once by the harness and shown once (what every channel shares
of this is in test_scenarios.py)."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import OWNER
from test_bridge import Start

from link_plugin.bridge.shown import FILE
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.slack import FakeSlack


def test_an_envelope_slack_sends_again_is_carried_and_answered_once(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    sent = slack.dm(OWNER, "hello once")
    first = slack.envelopes[-1].id
    slack.wait(lambda: slack.texts(OWNER.dm) == ["you said: hello once"])
    again = slack.resend(first)  # Slack missed the acknowledgement
    slack.wait(lambda: slack.was_acked(again))
    time.sleep(0.5)
    assert [(r.key, r.text) for r in harness.received] == [(f"{OWNER.dm}:{sent}", "hello once")]
    assert slack.texts(OWNER.dm) == ["you said: hello once"]
    assert len(slack.called("reactions.add")) == 1, "👀 not shown again on a message answered already"


def test_an_envelope_sent_again_to_a_restarted_bridge_is_kept_and_shown_once(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start, folder: Path
) -> None:
    first = bridge()
    sent = slack.dm(OWNER, "hello once")
    envelope = slack.envelopes[-1].id
    slack.wait(lambda: slack.texts(OWNER.dm) == ["you said: hello once"] and (folder / FILE).exists())
    first.stop()
    slack.wait(lambda: slack.connections == 0)
    bridge()
    slack.resend(envelope)
    slack.wait(lambda: len(harness.received) == 2)
    time.sleep(0.5)
    assert [(r.key, r.repeat) for r in harness.received] == [
        (f"{OWNER.dm}:{sent}", False),
        (f"{OWNER.dm}:{sent}", True),
    ]
    assert len(harness.messages) == 1, "kept once"
    assert slack.texts(OWNER.dm) == ["you said: hello once"], "shown once"
