"""The bridge carries the owner's messages to the harness and answers back, where Slack differs
(what every channel shares is in test_scenarios.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from conftest import GROUP, OWNER, STRANGER, spec

from link_plugin.bridge.base import EDITED, UNSUPPORTED
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness
from lnk_testing.slack import FakeSlack

Start = Callable[..., Background]


def test_the_owners_message_is_carried_with_the_headers_and_answered(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    sent = slack.dm(OWNER, "hello there")
    slack.wait(lambda: slack.texts(OWNER.dm) == ["you said: hello there"])
    (received,) = harness.received
    assert received.thread == f"slack:{OWNER.dm}"
    assert received.key == f"{OWNER.dm}:{sent}", "its key: the channel and Slack's ts of the message"
    assert received.headers["link-agent"] == AGENT.name
    assert received.headers["link-agent-id"] == AGENT.id
    assert received.text == "hello there"


def test_each_envelope_is_acknowledged_at_once_and_the_owners_message_shows_eyes_while_answered(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start
) -> None:
    hold = threading.Event()
    harness.script = lambda text: Answer(["thinking ", "done"], hold=hold)
    bridge()
    sent = slack.dm(OWNER, "take your time")
    envelope = slack.envelopes[-1]
    slack.wait(lambda: len(harness.received) == 1)
    assert slack.was_acked(envelope.id), "acknowledged before the answer is written"
    assert slack.acked[envelope.id] - envelope.sent < 1.0
    slack.wait(lambda: slack.reactions(OWNER.dm, sent) == ["eyes"])
    hold.set()
    slack.wait(lambda: slack.texts(OWNER.dm) == ["thinking done"])
    slack.wait(lambda: slack.reactions(OWNER.dm, sent) == [], timeout=5)
    posted = slack.called("chat.postMessage")[0].at
    assert slack.acked[envelope.id] < posted
    assert [c.params["name"] for c in slack.called("reactions.add")] == ["eyes"]


def test_the_owners_mention_in_a_channel_is_answered_there(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    asked = slack.channel(GROUP, OWNER, "what's up?", mention=True)
    slack.wait(lambda: slack.texts(GROUP) == ["you said: what's up?"])
    assert slack.messages(GROUP)[0].thread_ts is None, "answered in the channel"
    threaded = slack.channel(GROUP, OWNER, "and in here?", mention=True, thread_ts=asked)
    slack.wait(lambda: slack.texts(GROUP)[1:] == ["you said: and in here?"])
    assert slack.messages(GROUP)[1].thread_ts == asked, "a mention in a thread is answered in the thread"
    assert [r.thread for r in harness.received] == [f"slack:{GROUP}", f"slack:{GROUP}"]
    assert harness.received[1].key == f"{GROUP}:{threaded}"


def test_in_a_channel_only_the_owners_mention_is_carried_once(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start
) -> None:
    slack.subscribe("message.channels")  # an app that hears every message of its channels, not only mentions
    bridge()
    slack.channel(GROUP, OWNER, "hello app", mention=True)  # one message, two events: app_mention and message
    slack.wait(lambda: slack.texts(GROUP) == ["you said: hello app"])
    slack.channel(GROUP, OWNER, "no mention here")
    slack.channel(GROUP, STRANGER, "me too?", mention=True)
    slack.dm(OWNER, "and in private")
    slack.wait(lambda: slack.texts(OWNER.dm) == ["you said: and in private"])
    assert [r.text for r in harness.received] == ["hello app", "and in private"]
    assert slack.texts(GROUP) == ["you said: hello app"]


def test_files_and_edits_get_a_short_reply_and_nothing_breaks(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    slack.dm(OWNER, None, files=True)
    slack.wait(lambda: slack.texts(OWNER.dm) == [UNSUPPORTED])
    first = slack.dm(OWNER, "typo")
    slack.wait(lambda: len(slack.texts(OWNER.dm)) == 2)
    slack.edit(OWNER, first, "fixed")
    slack.wait(lambda: slack.texts(OWNER.dm)[-1] == EDITED)
    slack.dm(OWNER, "still <here> & there?")
    slack.wait(lambda: slack.texts(OWNER.dm)[-1] == "you said: still &lt;here&gt; &amp; there?")
    assert [r.text for r in harness.received] == ["typo", "still <here> & there?"], "Slack's escapes undone, and redone"


def _steer(slack: FakeSlack, harness: ScriptedHarness) -> str:
    hold = threading.Event()
    harness.script = lambda text: Answer(["thinking about ", text], hold=hold if text == "first" else None)
    slack.dm(OWNER, "first")
    slack.wait(lambda: len(harness.received) == 1)
    second = slack.dm(OWNER, "second")
    slack.wait(lambda: len(harness.received) == 2)
    hold.set()
    slack.wait(lambda: slack.texts(OWNER.dm) == ["thinking about first (and: second)"])
    return second


def test_a_message_that_steers_is_marked_and_answered_on_the_first(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge(spec(harness, slack, steered="✍️"))
    second = _steer(slack, harness)
    assert harness.received[1].steered
    slack.wait(lambda: slack.reactions(OWNER.dm, second) == ["writing_hand"])


def test_slack_asking_to_connect_again_loses_nothing(slack: FakeSlack, harness: ScriptedHarness, bridge: Start) -> None:
    bridge()
    slack.disconnect()
    slack.wait(lambda: slack.connections == 1 and len(slack.called("apps.connections.open")) >= 3)
    slack.dm(OWNER, "after the reconnect")
    slack.wait(lambda: slack.texts(OWNER.dm) == ["you said: after the reconnect"])


def test_revoked_tokens_end_the_bridge_saying_what_to_do(
    slack: FakeSlack, harness: ScriptedHarness, bridge: Start
) -> None:
    revoked = spec(harness, slack)
    revoked.secrets["bot-token"] = "xoxb-0000000000-revoked-token-0000"
    running = bridge(revoked)
    running.wait()
    assert running.error is not None and "refused the app's tokens" in str(running.error)
    assert "revoked-token" not in str(running.error)
