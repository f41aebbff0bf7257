"""The bridge carries the owner's messages to the harness and answers back, where WhatsApp differs
(what every channel shares is in test_scenarios.py): answers sent whole, the engine a process of
its own that may end at any moment."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from conftest import OWNER, STRANGER, spec
from lnk_whatsapp.chat import LIMIT

from link_plugin.approvals import Question
from link_plugin.bridge.asking import Said
from link_plugin.bridge.base import EDITED, UNSUPPORTED
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness
from lnk_testing.whatsapp import GROUP, FakeWhatsApp, chat_of

Start = Callable[..., Background]
OWNERS = chat_of(OWNER)


def test_the_owners_message_is_carried_with_the_headers_and_answered(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    sent = whatsapp.dm(OWNER, "hello there")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["you said: hello there"])
    (received,) = harness.received
    assert received.thread == f"whatsapp:{OWNERS}"
    assert received.key == f"{OWNER}:{sent}", "its key: the sender and WhatsApp's id of the message"
    assert received.headers["link-agent"] == AGENT.name
    assert received.headers["link-agent-id"] == AGENT.id
    assert received.text == "hello there"
    assert OWNERS in whatsapp.typing, "typing shows while the answer comes"


def test_the_answer_is_sent_whole_once_written_typing_meanwhile_never_edited(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    words = [f"word{i} " for i in range(30)]
    harness.script = lambda text: Answer(words, delay=0.05)
    bridge()
    whatsapp.dm(OWNER, "talk")
    whatsapp.wait(lambda: whatsapp.typing.count(OWNERS) >= 2)
    assert whatsapp.texts(OWNERS) == [], "nothing shown while it is written"
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["".join(words).strip()])
    (message,) = whatsapp.messages(OWNERS)
    assert len(message.history) == 1 and whatsapp.called("edit") == [], "sent once, never edited"


def test_a_long_answer_is_split_past_65536_characters_each_part_sent_once(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    paragraph = "Each answer says what it must. " * 700  # about 21,700 characters
    answer = "\n\n".join(f"{i}: {paragraph.strip()}" for i in range(7))
    harness.script = lambda text: Answer([answer[i : i + 8192] for i in range(0, len(answer), 8192)])
    bridge()
    whatsapp.dm(OWNER, "write a lot")
    whatsapp.wait(lambda: "6: " in "".join(whatsapp.texts(OWNERS)))
    texts = whatsapp.texts(OWNERS)
    assert len(answer) > 2 * LIMIT and len(texts) == 3
    assert all(len(text) <= LIMIT for text in texts)
    assert "\n\n".join(texts) == answer, "split between paragraphs, nothing lost or repeated"
    assert [call.status for call in whatsapp.called("send")] == [200, 200, 200]


def test_whatsapps_rate_limit_and_a_lost_connection_send_each_message_once(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    whatsapp.flood("send", retry_after=1, times=2)
    bridge()
    whatsapp.dm(OWNER, "go")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["you said: go"], timeout=30)
    flooded = whatsapp.called("send")
    assert [call.status for call in flooded] == [429, 429, 200], "sent once, after the waits WhatsApp asked for"
    assert flooded[1].at - flooded[0].at >= 0.95, "the wait WhatsApp asked for was kept"
    whatsapp.fail("send", times=2)
    whatsapp.dm(OWNER, "again")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS)[-1:] == ["you said: again"], timeout=30)
    assert [call.status for call in whatsapp.called("send")][3:] == [502, 502, 200]
    assert whatsapp.texts(OWNERS) == ["you said: go", "you said: again"]


def test_the_owners_mention_in_a_group_is_answered_there_quoting_them(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    asked = whatsapp.group(OWNER, "what's up?", mention=True)
    whatsapp.wait(lambda: whatsapp.texts(GROUP) == ["you said: what's up?"])
    assert whatsapp.messages(GROUP)[0].quote == asked, "answered quoting the owner's message"
    assert [(r.thread, r.text) for r in harness.received] == [(f"whatsapp:{GROUP}", "what's up?")], "mention taken out"


def test_in_a_group_only_the_owners_mention_of_the_account_is_carried(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    whatsapp.group(OWNER, "hello agent", mention=True)
    whatsapp.wait(lambda: whatsapp.texts(GROUP) == ["you said: hello agent"])
    answer = whatsapp.messages(GROUP)[0].id
    whatsapp.group(OWNER, "no mention here")
    whatsapp.group(OWNER, "thanks", quoted=answer)
    whatsapp.group(STRANGER, "me too?", mention=True)
    whatsapp.dm(STRANGER, "let me in")
    whatsapp.dm(OWNER, "and in private")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["you said: and in private"])
    assert [r.text for r in harness.received] == ["hello agent", "and in private"], "a reply without a mention is not"
    assert whatsapp.texts(GROUP) == ["you said: hello agent"]
    assert whatsapp.texts(chat_of(STRANGER)) == [] and chat_of(STRANGER) not in whatsapp.typing


def test_a_mention_by_the_accounts_hidden_id_counts(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    whatsapp.group(OWNER, "by hidden id", mention=True, hidden=True)
    whatsapp.wait(lambda: whatsapp.texts(GROUP) == ["you said: by hidden id"])
    assert [r.text for r in harness.received] == ["by hidden id"]


def test_photos_and_edits_get_a_short_reply_and_nothing_breaks(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    whatsapp.dm(OWNER, None)
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == [UNSUPPORTED])
    whatsapp.dm(OWNER, "typo")
    whatsapp.wait(lambda: len(whatsapp.texts(OWNERS)) == 2)
    whatsapp.dm(OWNER, "fixed", edited=True)
    whatsapp.wait(lambda: whatsapp.texts(OWNERS)[-1] == EDITED)
    whatsapp.dm(OWNER, "still here?")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS)[-1] == "you said: still here?")
    assert [r.text for r in harness.received] == ["typo", "still here?"]


def test_a_message_that_steers_gets_the_reaction_and_is_answered_on_the_first(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start, folder: object
) -> None:
    hold = threading.Event()
    harness.script = lambda text: Answer(["thinking about ", text], hold=hold if text == "first" else None)
    bridge(spec(harness, steered="👀", folder=folder))
    whatsapp.dm(OWNER, "first")
    whatsapp.wait(lambda: len(harness.received) == 1)
    second = whatsapp.dm(OWNER, "second")
    whatsapp.wait(lambda: len(harness.received) == 2)
    hold.set()
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["thinking about first (and: second)"])
    whatsapp.wait(lambda: whatsapp.reactions_for(second) == ["👀"])


# --- the engine ending --------------------------------------------------------------------------


def test_an_engine_that_ends_is_started_again_and_carries_on(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start, folder: object
) -> None:
    bridge()
    whatsapp.crash()
    whatsapp.wait(lambda: whatsapp.engines == 2 and whatsapp.running)
    whatsapp.dm(OWNER, "after the restart")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["you said: after the restart"])
    assert whatsapp.folders == [str(folder)] * 2, "each engine runs on the channel's folder"


def test_an_engine_that_keeps_ending_is_started_again_ever_later(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge(restarts=(0.2, 5.0))
    started = [time.monotonic()]
    for count in range(2, 6):
        whatsapp.wait(lambda count=count: whatsapp.engines == count - 1 and whatsapp.running)
        whatsapp.crash()
        whatsapp.wait(lambda count=count: whatsapp.engines == count)
        started.append(time.monotonic())
    gaps = [b - a for a, b in zip(started[1:], started[2:], strict=False)]
    waits = [0.4, 0.8, 1.6]  # doubling from 0.2 s, each kept before the engine starts again
    assert all(gap >= wait * 0.95 for gap, wait in zip(gaps, waits, strict=True)), f"backoff: {gaps}"
    whatsapp.wait(lambda: whatsapp.running)
    whatsapp.dm(OWNER, "still answered")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["you said: still answered"])


def test_a_message_delivered_again_to_a_new_engine_is_carried_once(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    whatsapp.dm(OWNER, "only once")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["you said: only once"])
    whatsapp.crash(again=True)  # WhatsApp never heard it acknowledged: the next engine gets it again
    whatsapp.wait(lambda: whatsapp.engines == 2 and whatsapp.running)
    whatsapp.dm(OWNER, "next")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["you said: only once", "you said: next"])
    assert [r.text for r in harness.messages] == ["only once", "next"]


def test_an_engine_ending_mid_send_after_it_landed_shows_the_answer_once(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    whatsapp.crash_on_send(landed=True)
    whatsapp.dm(OWNER, "landed")
    whatsapp.wait(lambda: whatsapp.engines == 2 and len(whatsapp.called("send")) == 2, timeout=30)
    time.sleep(0.3)
    assert whatsapp.texts(OWNERS) == ["you said: landed"], "sent again under its ref: not shown twice"


def test_an_engine_ending_mid_send_before_it_landed_loses_nothing(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    whatsapp.crash_on_send(landed=False)
    whatsapp.dm(OWNER, "not landed")
    whatsapp.wait(lambda: whatsapp.texts(OWNERS) == ["you said: not landed"], timeout=30)
    assert whatsapp.engines == 2 and [r.text for r in harness.messages] == ["not landed"]


def test_a_device_removed_on_the_phone_ends_the_bridge_saying_what_to_do(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    running = bridge()
    whatsapp.wait(lambda: whatsapp.running)
    whatsapp.log_out()
    running.wait()
    assert running.error is not None and "logged the agent's device out" in str(running.error)
    assert "lnk agent connect whatsapp" in str(running.error)


def test_an_unlinked_device_ends_the_bridge_saying_how_to_link(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, bridge: Start
) -> None:
    whatsapp.linked = False
    running = bridge()
    running.wait()
    assert running.error is not None and "isn't linked" in str(running.error)


# --- asking the owner ---------------------------------------------------------------------------


def _asked(whatsapp: FakeWhatsApp, control: ControlSocket, question: str) -> str:
    """The message asking `question` in the owner's chat, once the bridge knows it asked it."""
    whatsapp.wait(lambda: question in whatsapp.texts(OWNERS))
    polls = control.polls
    whatsapp.wait(lambda: control.polls > polls)
    return next(s.id for s in whatsapp.messages(OWNERS) if s.text == question)


def test_a_tool_call_is_asked_in_the_owners_chat_and_their_yes_answers_it(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    asked: list[Question] = []

    def turn(text: str) -> Answer:
        call = control.call("words", "erase", {"word": text})
        asked.append(call)
        return Answer(["Done with ", text], hold=control.decided(call.id))

    harness.script = turn
    bridge(approvals=str(control.path))
    whatsapp.dm(OWNER, "old")
    whatsapp.wait(lambda: asked)
    question = _asked(whatsapp, control, asked[0].wording())
    whatsapp.dm(STRANGER, "yes")
    whatsapp.group(OWNER, "yes")
    whatsapp.dm(OWNER, "yes", quoted=question)
    whatsapp.wait(lambda: "Done with old" in whatsapp.texts(OWNERS))
    assert control.answered == {asked[0].id: True}, "the owner's yes, not the stranger's"
    told = f"{asked[0].wording()}\n\n{Said.ALLOWED.value}"
    whatsapp.wait(lambda: told in whatsapp.texts(OWNERS))
    assert [r.text for r in harness.received] == ["old"], "the yes went to Link, never to the agent"
    assert whatsapp.texts(chat_of(STRANGER)) == []


def test_a_call_from_the_terminal_is_asked_and_a_plain_no_denies_it(
    whatsapp: FakeWhatsApp, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    bridge(approvals=str(control.path))
    call = control.call("words", "erase", {"word": "from the terminal"})
    _asked(whatsapp, control, call.wording())
    whatsapp.dm(OWNER, "No")
    whatsapp.wait(lambda: control.answered == {call.id: False})
    whatsapp.wait(lambda: whatsapp.texts(OWNERS)[-1].endswith(Said.DENIED.value))
    assert harness.received == []
