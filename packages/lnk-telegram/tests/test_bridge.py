"""The bridge carries the owner's messages to the harness and streams the answers back."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

from conftest import FAST, OWNER, STRANGER, spec

from link_plugin.bridge.base import EDITED, UNSUPPORTED
from link_plugin.bridge.carry import INTERRUPTED, Pace
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness
from lnk_testing.telegram import FakeTelegram, utf16

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


def test_only_the_new_message_is_sent_never_the_history(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    telegram.private(OWNER, "one")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: one"])
    telegram.private(OWNER, "two")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: one", "you said: two"])
    assert [r.text for r in harness.received] == ["one", "two"]


def test_an_answer_is_edited_in_place_while_written(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    words = [f"word{i} " for i in range(20)]
    harness.script = lambda text: Answer(words, delay=0.03)
    bridge()
    telegram.private(OWNER, "talk")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["".join(words).strip()])
    (message,) = telegram.messages(OWNER.id)
    assert len(message.history) >= 3, "shown while written, not only at the end"
    texts = [text for _, text in message.history]
    assert all(later.startswith(earlier) for earlier, later in zip(texts, texts[1:], strict=False))
    gaps = [b - a for (a, _), (b, _) in zip(message.history, message.history[1:], strict=False)]
    assert min(gaps) >= FAST.interval * 0.9


def test_edits_come_about_once_a_second_by_default(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    harness.script = lambda text: Answer([f"{i} " for i in range(32)], delay=0.1)
    bridge(pace=Pace(typing=4.0, hold=10.0))
    telegram.private(OWNER, "count")
    telegram.wait(lambda: telegram.texts(OWNER.id)[-1:] == [" ".join(str(i) for i in range(32))], timeout=15)
    (message,) = telegram.messages(OWNER.id)
    times = [at for at, _ in message.history]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(gap >= 0.95 for gap in gaps), f"never faster than once a second: {gaps}"
    assert len(gaps) >= 2, "shown while written"
    assert max(gaps) < 1.6, f"and not much slower, while words keep coming: {gaps}"


def test_a_long_answer_is_split_past_4096_on_paragraphs(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    paragraph = "Telegram counts 🚀 as two. " * 30
    answer = "\n\n".join(f"{i}: {paragraph.strip()}" for i in range(14))
    pieces = [answer[i : i + 700] for i in range(0, len(answer), 700)]
    harness.script = lambda text: Answer(pieces, delay=0.02)
    bridge()
    telegram.private(OWNER, "write a lot")
    telegram.wait(lambda: "13: " in "".join(telegram.texts(OWNER.id)) and telegram.texts(OWNER.id)[-1].endswith("two."))
    texts = telegram.texts(OWNER.id)
    assert len(texts) >= 3
    assert all(utf16(text) <= 4096 for text in texts)
    assert "\n\n".join(texts) == answer, "split between paragraphs, nothing lost or repeated"
    assert all(text.split(":")[0].isdigit() for text in texts), "each message starts a paragraph"


def test_flood_control_and_network_errors_leave_no_duplicate_and_no_partial_message(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    paragraph = "x" * 3000
    answer = f"start {paragraph}\n\nmiddle {paragraph}\n\nend {paragraph} done"
    pieces = [answer[i : i + 500] for i in range(0, len(answer), 500)]
    harness.script = lambda text: Answer(pieces, delay=0.2)
    telegram.flood("sendMessage", retry_after=1, times=2)
    telegram.fail("sendMessage", times=1)
    bridge()
    telegram.private(OWNER, "go")
    telegram.wait(lambda: telegram.texts(OWNER.id))
    telegram.flood("editMessageText", retry_after=1, times=3)
    telegram.fail("editMessageText", times=2)
    telegram.lose("editMessageText", delay=3, times=1)
    expected = [f"start {paragraph}", f"middle {paragraph}", f"end {paragraph} done"]
    telegram.wait(lambda: telegram.texts(OWNER.id) == expected, timeout=40)
    sent_ok = [c for c in telegram.called("sendMessage") if c.status == 200]
    assert len(sent_ok) == 3, "every message sent once"
    assert [c.status for c in telegram.called("sendMessage")].count(429) == 2
    assert [c.status for c in telegram.called("editMessageText")].count(429) == 3


def test_an_edit_that_landed_but_whose_answer_was_lost_is_not_sent_again(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    harness.script = lambda text: Answer(["first part", " and the rest"], delay=0.3)
    telegram.lose("editMessageText", delay=3, times=1)
    bridge()
    telegram.private(OWNER, "go")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["first part and the rest"], timeout=40)
    assert len(telegram.messages(OWNER.id)) == 1


def test_strangers_are_never_carried_nor_answered(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    telegram.private(STRANGER, "let me in")
    telegram.group(-100777, STRANGER, "hey bot", mention=True)
    telegram.private(OWNER, "after them")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: after them"])
    assert [r.text for r in harness.received] == ["after them"]
    assert telegram.messages(STRANGER.id) == [] and telegram.messages(-100777) == []


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


def test_recovery_at_start_delivers_this_channels_answers_once(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    ours = harness.keep(f"telegram:{OWNER.id}", "the answer you missed")
    theirs = harness.keep("slack:D123", "for the slack bridge")
    telegram.meet(OWNER)
    bridge()
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["the answer you missed"])
    telegram.wait(lambda: harness.confirmed == [ours])
    assert [a.id for a in harness.kept] == [theirs], "another channel's answer stays for its bridge"


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


def test_a_harness_dying_mid_answer_says_so_and_its_answer_follows(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    harness.script = lambda text: Answer(["half an ", "answer"], crash_after=1)
    bridge()
    telegram.wait(lambda: harness.recovers >= 1)
    telegram.private(OWNER, "tell me")
    telegram.wait(lambda: telegram.texts(OWNER.id)[:1] == [f"half an\n\n{INTERRUPTED}"])
    telegram.wait(lambda: telegram.texts(OWNER.id)[1:] == ["half an answer"])
    telegram.wait(lambda: harness.kept == [])
    assert [r.text for r in harness.received] == ["tell me"], "the message is never sent twice"


def test_a_program_holding_the_port_never_gets_the_key(
    telegram: FakeTelegram, harness: ScriptedHarness, bridge: Start
) -> None:
    harness.honest = False
    bridge()
    telegram.private(OWNER, "secret plans")
    telegram.wait(lambda: harness.proofs >= 2)
    assert not harness.saw_key()
    assert all("secret plans" not in json.dumps(headers) for _, headers in harness.requests)
    assert harness.received == []


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
