"""Tool calls waiting for the owner, where Telegram differs: a press is answered with a word (the
callback query's answer), a stranger's with nothing, one that came too late or found the agent
away is told so (what every channel shares of asking is in test_scenarios.py)."""

from __future__ import annotations

from collections.abc import Callable

from conftest import OWNER, STRANGER, TelegramService, spec

from link_plugin.bridge.asking import Said
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.scenarios import questions, waiting
from lnk_testing.telegram import FakeTelegram

Start = Callable[..., Background]


def test_a_press_is_answered_with_a_word_and_a_strangers_with_nothing(
    service: TelegramService, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    telegram = service.telegram
    call, question = waiting(service, harness, control, bridge)
    theirs = telegram.press(STRANGER, int(question.id), "allow")
    ours = telegram.press(OWNER, int(question.id), "allow")
    telegram.wait(lambda: telegram.queries[ours] == Said.ALLOWED.value)
    assert telegram.queries[theirs] is None, "the stranger's press got no answer at all"
    assert control.answered == {call.id: True}


def test_a_press_after_the_call_was_answered_elsewhere_is_told_so(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    bridge(spec(harness, approvals=str(control.path)))
    telegram.meet(OWNER)
    called = control.call("words", "erase", {"word": "a turn from the terminal"})
    telegram.wait(lambda: telegram.messages(OWNER.id))
    (question,) = telegram.messages(OWNER.id)
    control.elsewhere(called.id)
    telegram.wait(lambda: question.buttons == [])
    late = telegram.press(OWNER, question.message_id, "allow")  # a press can cross the edit
    telegram.wait(lambda: telegram.queries[late] == Said.GONE.value)
    assert control.answered == {} and control.refused_posts == 0


def test_no_control_socket_then_one(
    service: TelegramService, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    telegram = service.telegram
    control.stop()
    running = bridge(spec(harness, approvals=str(control.path)))
    telegram.private(OWNER, "yes")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["you said: yes"])
    control.start()
    called = control.call("words", "erase", {"word": "old"})
    (question,) = questions(service, control)
    control.stop()
    query = telegram.press(OWNER, int(question.id), "allow")
    telegram.wait(lambda: telegram.queries[query] == Said.UNREACHABLE.value)
    (still,) = [m for m in service.shown(service.chat()) if m.id == question.id]
    assert still.buttons == ("Allow", "Deny"), "still open: the owner can try again"
    assert running.error is None
    assert called.id not in control.answered
