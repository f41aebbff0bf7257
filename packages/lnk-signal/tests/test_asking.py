"""Tool calls waiting for the owner, asked in their Signal chat. Signal has no buttons: the owner
answers with a yes or no (quoting a question answers that one), which goes to the control socket,
never to the agent; the question's message is edited once to say how it ended."""

from __future__ import annotations

from collections.abc import Callable

from conftest import OWNER, STRANGER

from link_plugin.approvals import Question
from link_plugin.bridge.asking import Said
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.signal_cli import FakeSignal, Sent

Start = Callable[..., Background]


def _asked(signal: FakeSignal, control: ControlSocket, word: str) -> tuple[Question, Sent]:
    """A tool call from the terminal waiting for the owner, asked in their chat by the bridge; the
    call and its question, once the bridge knows the question's message."""
    called = control.call("words", "erase", {"word": word})
    signal.wait(lambda: called.wording() in signal.texts(OWNER.number))
    polls = control.polls
    signal.wait(lambda: control.polls > polls)
    (shown,) = [s for s in signal.messages(OWNER.number) if s.text == called.wording()]
    return called, shown


def test_the_owners_yes_allows_the_call_and_is_never_carried(
    signal: FakeSignal, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    bridge(approvals=str(control.path))
    call, question = _asked(signal, control, "old")
    assert "(yes or no)" in question.text, "Signal has no buttons: the question says how to answer"
    signal.dm(OWNER, "Yes")
    signal.wait(lambda: question.text == f"{call.wording()}\n\n{Said.ALLOWED.value}")
    assert control.answered == {call.id: True}
    assert len(question.history) == 2, "the question's message edited once, to say how it ended"
    assert harness.received == [], "the yes went to Link, not to the agent"
    signal.dm(OWNER, "yes")
    signal.wait(lambda: signal.texts(OWNER.number)[-1] == "you said: yes")
    assert [r.text for r in harness.received] == ["yes"], "with nothing asked, a yes is a message"


def test_a_strangers_yes_is_no_answer_and_a_quote_answers_its_question(
    signal: FakeSignal, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    bridge(approvals=str(control.path))
    first, _ = _asked(signal, control, "first")
    call, question = _asked(signal, control, "second")
    signal.dm(STRANGER, "yes")
    signal.group(STRANGER, "yes", mention=True)
    signal.dm(OWNER, "no", quote=question.timestamp)
    signal.wait(lambda: question.text.endswith(Said.DENIED.value))
    assert control.answered == {call.id: False}, "only the owner's answer counted, for the question it quotes"
    assert control.waiting == [first.id]
    assert signal.texts(STRANGER.number) == []


def test_a_call_answered_in_the_terminal_is_settled_in_the_chat(
    signal: FakeSignal, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    bridge(approvals=str(control.path))
    called, _ = _asked(signal, control, "from the terminal")
    control.elsewhere(called.id)
    signal.wait(lambda: signal.texts(OWNER.number) == [f"{called.wording()}\n\n{Said.GONE.value}"])
    assert control.answered == {}
