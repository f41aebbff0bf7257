"""The bridge carries the owner's messages to the harness and answers back, where Telegram differs
(what every channel shares is in test_scenarios.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from conftest import GROUP, OWNER, STRANGER, spec

from link_plugin.bridge.base import EDITED, UNSUPPORTED
from link_plugin.scheduler import Notice, post
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness
from lnk_testing.telegram import FakeTelegram

Start = Callable[..., Background]


def test_the_owners_message_is_carried_with_the_headers_and_answered(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    sent = telegram.private(OWNER, "hello there")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: hello there"])
    (received,) = harness.received
    assert received.thread == f"telegram:{OWNER.id}"
    assert received.key == f"{OWNER.id}:{sent}", "its key: the chat and Telegram's id of the message"
    assert received.headers["link-agent"] == AGENT.name
    assert received.headers["link-agent-id"] == AGENT.id
    assert received.text == "hello there"
    assert telegram.called("sendChatAction"), "typing shows while the answer comes"
    assert telegram.called("sendChatAction")[0].params["action"] == "typing"


def test_an_edit_that_landed_but_whose_answer_was_lost_is_not_sent_again(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    harness.script = lambda text: Answer(["first part", " and the rest"], delay=0.3)
    telegram.lose("editMessageText", delay=3, times=1)
    bridge()
    telegram.private(OWNER, "go")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["first part and the rest"], timeout=40)
    assert len(telegram.messages(OWNER.id)) == 1


def test_the_owners_mention_in_a_group_is_answered_there(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    asked = telegram.group(-100111, OWNER, "what's up?", mention=True)
    telegram.group(-100222, OWNER, "and here?", mention="text")
    # The @mention is taken out of the text (a mention by name stays); wait for the final edits.
    by_name = f"you said: {telegram.bot['first_name']} and here?"
    telegram.wait(lambda: telegram.texts(-100111) == ["you said: what's up?"] and telegram.texts(-100222) == [by_name])
    assert telegram.messages(-100111)[0].reply_to == asked, "answered as a reply to the owner's message"
    assert sorted(r.thread for r in harness.received) == ["telegram:-100111", "telegram:-100222"]


def test_in_a_group_only_the_owners_mention_is_carried(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    telegram.group(-100111, OWNER, "hello bot", mention=True)
    telegram.wait(lambda: telegram.texts(-100111) == ["you said: hello bot"])
    bot_message = telegram.messages(-100111)[0].message_id
    telegram.group(-100111, OWNER, "no mention here")
    telegram.group(-100111, OWNER, "thanks", reply_to=bot_message)
    telegram.group(-100111, STRANGER, "me too?", mention=True)
    telegram.group(-100111, STRANGER, "and a reply", reply_to=bot_message)
    telegram.private(OWNER, "and in private")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: and in private"])
    telegram.wait(lambda: telegram.pending == 0)
    assert [r.text for r in harness.received] == ["hello bot", "and in private"], "a reply without a mention is not"
    assert telegram.texts(-100111) == ["you said: hello bot"]
    assert telegram.messages(STRANGER.id) == []


def test_media_and_edits_get_a_short_reply_and_nothing_breaks(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    telegram.photo(OWNER)
    telegram.wait(lambda: telegram.texts(OWNER.id) == [UNSUPPORTED])
    first = telegram.private(OWNER, "typo")
    telegram.wait(lambda: len(telegram.texts(OWNER.id)) == 2)
    telegram.edited(OWNER, first, "fixed")
    telegram.wait(lambda: telegram.texts(OWNER.id)[-1] == EDITED)
    telegram.private(OWNER, "still here?")
    telegram.wait(lambda: telegram.texts(OWNER.id)[-1] == "you said: still here?")
    assert [r.text for r in harness.received] == ["typo", "still here?"]


def _steer(telegram: FakeTelegram, harness: ScriptedHarness) -> tuple[int, threading.Event]:
    hold = threading.Event()
    harness.script = lambda text: Answer(["thinking about ", text], hold=hold if text == "first" else None)
    telegram.private(OWNER, "first")
    telegram.wait(lambda: len(harness.received) == 1)
    second = telegram.private(OWNER, "second")
    telegram.wait(lambda: len(harness.received) == 2)
    hold.set()
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["thinking about first (and: second)"])
    return second, hold


def test_a_message_that_steers_is_marked_and_answered_on_the_first(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge(spec(harness, steered="👀"))
    second, _ = _steer(telegram, harness)
    assert harness.received[1].steered
    telegram.wait(lambda: telegram.reactions(OWNER.id, second) == ["👀"])


def test_no_mark_by_default(telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start) -> None:
    bridge()
    second, _ = _steer(telegram, harness)
    assert telegram.reactions(OWNER.id, second) == []
    assert not telegram.called("setMessageReaction")


def test_after_a_harness_restart_held_messages_and_missed_answers_arrive(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    telegram.wait(lambda: harness.recovers >= 1)
    harness.stop()
    before = harness.recovers
    telegram.private(OWNER, "are you there?")
    telegram.wait(lambda: telegram.called("sendChatAction"))
    harness.keep(f"telegram:{OWNER.id}", "finished while nobody waited")
    harness.start()
    telegram.wait(
        lambda: sorted(telegram.texts(OWNER.id)) == ["finished while nobody waited", "you said: are you there?"]
    )
    assert harness.recovers > before, "asked again when the harness answered again"
    assert len(telegram.texts(OWNER.id)) == 2


def test_telegram_away_and_back(telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start) -> None:
    bridge()
    telegram.wait(lambda: telegram.called("getUpdates"))
    telegram.stop()
    telegram.private(OWNER, "sent while the bridge couldn't reach Telegram")
    telegram.start()
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: sent while the bridge couldn't reach Telegram"])


def test_a_revoked_token_ends_the_bridge_saying_what_to_do(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    revoked = spec(harness)
    revoked.secrets["bot-token"] = "123456789:AAF-revoked-token-000000000000000000"
    running = bridge(revoked)
    running.wait()
    assert running.error is not None and "refused the bot token" in str(running.error)
    assert "revoked-token" not in str(running.error)


def test_an_answer_nobody_waits_for_reaches_the_owners_private_chat_never_a_group(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start, tmp_path: Path
) -> None:
    """Another agent's message was answered by this one (its runner posted the answer for the owner):
    it arrives once in the owner's private chat, while a group the owner talks in gets nothing."""
    telegram.meet(OWNER)  # the owner paired in their private chat
    outbox = tmp_path / "outbox"
    post(outbox, Notice(id="n1", text="Tomorrow is clear: nothing before ten.", sender="agent:workagent001"))
    bridge(spec(harness).model_copy(update={"outbox": str(outbox)}), notices=0.1)
    telegram.group(GROUP, OWNER, "hi all", mention=False)
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["Tomorrow is clear: nothing before ten."])
    telegram.wait(lambda: not list(outbox.glob("*.json")))
    assert telegram.texts(GROUP) == [] and harness.received == []
