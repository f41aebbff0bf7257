"""Tool calls waiting for the owner are asked in their private chat, with Allow and Deny buttons,
and answered there by the owner alone; the answer goes to the control socket, never the harness."""

from __future__ import annotations

from collections.abc import Callable

from conftest import OWNER, STRANGER, spec

from link_plugin.approvals import Question
from link_plugin.bridge.asking import Said
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.endpoint import Answer, ScriptedHarness, echo
from lnk_testing.telegram import FakeTelegram, Sent

Start = Callable[..., Background]


def _waiting(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> tuple[Question, Sent]:
    """A bridge asking the owner; their message "old" starts a turn whose tool call waits for them
    before the answer goes on (any other message is echoed). The call, and its question shown."""
    asked: list[Question] = []

    def turn(text: str) -> Answer:
        if text != "old":
            return echo(text)
        question = control.call("words", "erase", {"word": text})
        asked.append(question)
        return Answer(["Done with ", text], hold=control.decided(question.id))

    harness.script = turn
    bridge(spec(harness, approvals=str(control.path)))
    telegram.private(OWNER, "old")
    shown = _question(telegram)
    return asked[0], shown


def _question(telegram: FakeTelegram) -> Sent:
    telegram.wait(lambda: [m for m in telegram.messages(OWNER.id) if m.buttons])
    (shown,) = [m for m in telegram.messages(OWNER.id) if m.buttons]
    return shown


def test_the_owner_presses_allow_and_the_turn_goes_on(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    call, question = _waiting(telegram, harness, control, bridge)
    assert question.text == call.wording()
    assert question.buttons == ["Allow", "Deny"]
    query = telegram.press(OWNER, question.message_id, "allow")
    telegram.wait(lambda: telegram.texts(OWNER.id)[-1] == "Done with old")
    assert control.answered == {call.id: True}
    telegram.wait(lambda: telegram.queries[query] == Said.ALLOWED.value)
    assert question.text == f"{call.wording()}\n\nAllowed." and question.buttons == []
    assert [r.text for r in harness.received] == ["old"]


def test_a_plain_no_answers_and_is_never_carried(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    call, question = _waiting(telegram, harness, control, bridge)
    telegram.private(OWNER, "No")
    telegram.wait(lambda: telegram.texts(OWNER.id)[-1] == "Done with old")
    assert control.answered == {call.id: False}
    telegram.wait(lambda: question.text.endswith("Denied."))  # the turn may go on before the question ends
    assert question.buttons == []
    assert [r.text for r in harness.received] == ["old"], "the owner's no went to Link, not to the agent"
    telegram.private(OWNER, "no")
    telegram.wait(lambda: telegram.texts(OWNER.id)[-1] == "you said: no")
    assert [r.text for r in harness.received] == ["old", "no"], "with nothing asked, a no is a message"


def test_a_strangers_press_or_yes_is_no_answer(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    call, question = _waiting(telegram, harness, control, bridge)
    theirs = telegram.press(STRANGER, question.message_id, "allow")
    telegram.private(STRANGER, "yes")
    telegram.group(-100333, OWNER, "yes", mention=True)
    telegram.wait(lambda: len(harness.received) == 2)
    ours = telegram.press(OWNER, question.message_id, "deny")
    telegram.wait(lambda: telegram.queries[ours] == Said.DENIED.value)
    assert control.answered == {call.id: False}, "only the owner's press counted"
    assert telegram.queries[theirs] is None, "the stranger's press got no answer at all"
    assert telegram.messages(STRANGER.id) == []
    assert [r.text for r in harness.received] == ["old", "yes"], "the owner's mention in a group is a message"


def test_a_call_answered_in_the_terminal_loses_its_buttons(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    bridge(spec(harness, approvals=str(control.path)))
    telegram.meet(OWNER)
    waiting = control.call("words", "erase", {"word": "a turn from the terminal"})
    question = _question(telegram)
    assert question.text == waiting.wording(), "asked even when no message of Telegram's started the turn"
    control.elsewhere(waiting.id)
    telegram.wait(lambda: question.buttons == [])
    assert question.text == f"{waiting.wording()}\n\n{Said.GONE.value}"
    late = telegram.press(OWNER, question.message_id, "allow")
    telegram.wait(lambda: telegram.queries[late] == Said.GONE.value)
    assert control.answered == {} and control.refused_posts == 0


def test_a_reply_to_a_question_answers_that_one(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    bridge(spec(harness, approvals=str(control.path)))
    telegram.meet(OWNER)
    first = control.call("words", "erase", {"word": "a"})
    telegram.wait(lambda: telegram.texts(OWNER.id))
    second = control.call("words", "erase", {"word": "b"})
    telegram.wait(lambda: len(telegram.texts(OWNER.id)) == 2)
    asked_second = telegram.messages(OWNER.id)[1]
    telegram.private(OWNER, "yes", reply_to=asked_second.message_id)
    telegram.wait(lambda: asked_second.buttons == [])
    assert control.answered == {second.id: True} and control.waiting == [first.id]
    assert telegram.messages(OWNER.id)[0].buttons == ["Allow", "Deny"]
    assert harness.received == []


def test_no_control_socket_then_one(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    control.stop()
    running = bridge(spec(harness, approvals=str(control.path)))
    telegram.private(OWNER, "yes")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: yes"])
    control.start()
    waiting = control.call("words", "erase", {"word": "old"})
    question = _question(telegram)
    control.stop()
    query = telegram.press(OWNER, question.message_id, "allow")
    telegram.wait(lambda: telegram.queries[query] == Said.UNREACHABLE.value)
    assert question.buttons == ["Allow", "Deny"], "still open: the owner can try again"
    assert running.error is None
    assert waiting.id not in control.answered
