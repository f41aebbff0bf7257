"""The bridge's behaviour every channel shares, as tests each channel runs against its own fake service.

A channel's tests say how to drive their fake (a `Service`: send the bot a message, read what it
shows, make its calls fail) in a `service` fixture, give a `bridge` fixture that starts their
bridge (`Start`) and the `control` socket of `lnk_testing.channels`, and take the scenarios in
one short class (`tests/test_scenarios.py`):

    class TestSlack(Scenarios): ...

What differs between services (a message's key, how a mention or a reply is marked, typing or
👀, their flood control) stays in each channel's own tests; what's here is what a person would
see the same way on each: only the owner's message carried, never the history; an answer edited
in place about once a second and split at the channel's limit; no duplicate and no partial answer
through flood control and network errors; an answer recovered, shown once, whoever died when; the
key never handed to a program that can't prove it holds it; pairing by the code, in time, with a
few tries; tool calls asked in the owner's direct chat and answered there by the owner alone.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import pytest

from link_plugin.approvals import Question
from link_plugin.bridge.asking import Said
from link_plugin.bridge.carry import INTERRUPTED, Pace
from link_plugin.bridge.pairing import LIMITED, PAIRED, TRIES, WRONG, expired_text
from link_plugin.bridge.shown import FILE
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.channels import FAST, Clock, Connecting
from lnk_testing.endpoint import Answer, ScriptedHarness, echo

Call = Literal["send", "edit"]
"""A call of the bridge's to its service: posting a new message, or editing one."""


class Start(Protocol):
    """Start the channel's bridge (the `bridge` fixture): at `pace`, asking the owner at the control
    socket `approvals` if given, with the channel's options."""

    def __call__(self, *, pace: Pace = FAST, approvals: str | None = None, **options: Any) -> Background: ...


@dataclass(frozen=True)
class Shown:
    """A message the bot shows, with every text it held and when, and the buttons it shows now."""

    history: list[tuple[float, str]]
    id: str = ""
    buttons: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.history[-1][1]


class Service(ABC):
    """A channel's fake service, as the scenarios drive it."""

    fake: Any
    """The fake itself (`FakeTelegram`, `FakeSlack`, `FakeDiscord`): each makes a call of the bot's
    flood, fail or come back late, lists the calls made, and waits, the same way."""
    CALLS: ClassVar[dict[Call, tuple[str, ...]]]
    """How the fake names sending and editing a message (a method, or an HTTP verb and path)."""
    channel: str
    limit: int
    """The channel's longest message."""

    def measure(self, text: str) -> int:
        """How the channel counts a text against its limit."""
        return len(text)

    sentence = "Each answer says what it must. "
    """What a long answer is made of (Telegram's counts an emoji twice)."""
    patient: ClassVar[dict[str, Any]] = {}
    """The bridge's options for waiting out an answer that comes seconds late (a longer timeout)."""

    @abstractmethod
    def send(self, text: str, *, stranger: bool = False, group: bool = False, reply_to: str | None = None) -> str:
        """A message to the bot from its owner (or a stranger), in their direct chat (or, mentioning
        the bot, in the group), replying to the bot's message `reply_to` as the service lets one
        (a reply, a thread); its key, as the bridge sends it (`Link-Message-Id`)."""

    @abstractmethod
    def press(self, message: str, value: str, *, stranger: bool = False) -> None:
        """The owner (or a stranger) presses the button `value` under the bot's message."""

    @abstractmethod
    def connecting(self, monkeypatch: pytest.MonkeyPatch, *, taken: bool = False, **options: Any) -> Connecting:
        """The channel's `connect` running as in the owner's terminal (`options` as its `connect`
        takes them); with `taken`, another agent here has the bot."""

    @abstractmethod
    def refused(self, monkeypatch: pytest.MonkeyPatch) -> tuple[Connecting, str]:
        """`connect` given a token the service refuses; and that token."""

    owner_id: object
    """The owner as the channel's section names them."""

    @abstractmethod
    def chat(self, *, stranger: bool = False, group: bool = False) -> str:
        """The id of the owner's direct chat (or the stranger's, or the group), as the thread names it."""

    @abstractmethod
    def shown(self, chat: str) -> list[Shown]:
        """What the bot shows in `chat` now, in order."""

    @abstractmethod
    def meet(self) -> None:
        """The owner's direct chat is open, so the bot may write there first."""

    @abstractmethod
    def answering(self, chat: str) -> int:
        """How many times the bot showed it was answering in `chat` (typing, 👀): it tried a message."""

    def flood(self, call: Call, retry_after: float, times: int) -> None:
        """The next `times` such calls get the service's flood control, asking to wait `retry_after`."""
        self.fake.flood(*self.CALLS[call], retry_after=retry_after, times=times)

    def fail(self, call: Call, times: int) -> None:
        """The next `times` such calls fail before they land (a gateway error)."""
        self.fake.fail(*self.CALLS[call], times=times)

    def lose(self, call: Call, delay: float) -> None:
        """The next such call lands, but the bot hears so `delay` seconds late."""
        self.fake.lose(*self.CALLS[call], delay=delay)

    def calls(self, call: Call) -> list[tuple[int, float]]:
        """Each such call so far: its HTTP status, and when it came (`time.monotonic`)."""
        return [(made.status, made.at) for made in self.fake.called(*self.CALLS[call])]

    def statuses(self, call: Call) -> list[int]:
        return [status for status, _ in self.calls(call)]

    def texts(self, chat: str) -> list[str]:
        return [message.text for message in self.shown(chat)]

    def thread(self, chat: str) -> str:
        return f"{self.channel}:{chat}"

    def wait(self, condition: Callable[[], object], timeout: float = 20.0) -> None:
        """Poll `condition`; fail the test, saying what the bot posted, when it isn't true within `timeout`."""
        self.fake.wait(condition, timeout)


class BridgeScenarios:
    """The scenarios; a channel's test class takes them by inheriting this."""

    def test_only_the_new_message_is_carried_never_the_history(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        bridge()
        owner = service.chat()
        first = service.send("one")
        service.wait(lambda: service.texts(owner) == ["you said: one"])
        second = service.send("two")
        service.wait(lambda: service.texts(owner) == ["you said: one", "you said: two"])
        assert [(r.text, r.key, r.thread) for r in harness.received] == [
            ("one", first, service.thread(owner)),
            ("two", second, service.thread(owner)),
        ]

    def test_an_answer_is_edited_in_place_while_written(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        words = [f"word{i} " for i in range(20)]
        harness.script = lambda text: Answer(words, delay=0.03)
        bridge()
        owner = service.chat()
        service.send("talk")
        service.wait(lambda: service.texts(owner) == ["".join(words).strip()])
        (message,) = service.shown(owner)
        assert len(message.history) >= 3, "shown while written, not only at the end"
        texts = [text for _, text in message.history]
        assert all(later.startswith(earlier) for earlier, later in zip(texts, texts[1:], strict=False))
        gaps = [b - a for (a, _), (b, _) in zip(message.history, message.history[1:], strict=False)]
        assert min(gaps) >= FAST.interval * 0.9

    def test_edits_come_about_once_a_second_by_default(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        harness.script = lambda text: Answer([f"{i} " for i in range(32)], delay=0.1)
        bridge(pace=Pace(typing=4.0, hold=10.0))
        owner = service.chat()
        service.send("count")
        service.wait(lambda: service.texts(owner)[-1:] == [" ".join(str(i) for i in range(32))], timeout=15)
        (message,) = service.shown(owner)
        times = [at for at, _ in message.history]
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert all(gap >= 0.95 for gap in gaps), f"never faster than once a second: {gaps}"
        assert len(gaps) >= 2, "shown while written"
        assert max(gaps) < 1.6, f"and not much slower, while words keep coming: {gaps}"

    def test_a_long_answer_is_split_past_the_channels_limit_on_paragraphs(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        paragraph = service.sentence * max(1, service.limit // 4 // len(service.sentence))
        answer = "\n\n".join(f"{i}: {paragraph.strip()}" for i in range(14))
        pieces = [answer[i : i + 700] for i in range(0, len(answer), 700)]
        harness.script = lambda text: Answer(pieces, delay=0.02)
        bridge()
        owner = service.chat()
        service.send("write a lot")
        end = paragraph.strip()[-12:]
        service.wait(lambda: "13: " in "".join(service.texts(owner)) and service.texts(owner)[-1].endswith(end))
        texts = service.texts(owner)
        assert len(texts) >= 3
        assert all(service.measure(text) <= service.limit for text in texts)
        assert "\n\n".join(texts) == answer, "split between paragraphs, nothing lost or repeated"
        assert all(text.split(":")[0].isdigit() for text in texts), "each message starts a paragraph"

    def test_flood_control_and_network_errors_leave_no_duplicate_and_no_partial_message(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        paragraph = "x" * (service.limit * 3 // 4)
        answer = f"start {paragraph}\n\nmiddle {paragraph}\n\nend {paragraph} done"
        pieces = [answer[i : i + 500] for i in range(0, len(answer), 500)]
        harness.script = lambda text: Answer(pieces, delay=0.2)
        service.flood("send", retry_after=1, times=2)
        service.fail("send", times=1)
        bridge()
        owner = service.chat()
        service.send("go")
        service.wait(lambda: service.texts(owner))
        service.flood("edit", retry_after=1, times=3)
        service.fail("edit", times=2)
        service.lose("edit", delay=3)
        expected = [f"start {paragraph}", f"middle {paragraph}", f"end {paragraph} done"]
        service.wait(lambda: service.texts(owner) == expected, timeout=40)
        assert service.statuses("send").count(200) == 3, "every message sent once"
        assert service.statuses("send").count(429) == 2
        assert service.statuses("edit").count(429) == 3
        flooded = [at for status, at in service.calls("send") if status == 429]
        assert flooded[1] - flooded[0] >= 0.95, "the wait the service asked for was kept"

    def test_strangers_are_never_carried_nor_answered(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        bridge()
        service.send("let me in", stranger=True)
        service.send("hey bot", stranger=True, group=True)
        service.send("after them")
        service.wait(lambda: service.texts(service.chat()) == ["you said: after them"])
        assert [r.text for r in harness.received] == ["after them"]
        for theirs in (service.chat(stranger=True), service.chat(group=True)):
            assert service.shown(theirs) == [] and service.answering(theirs) == 0, "nothing, not even typing"

    def test_recovery_at_start_delivers_this_channels_answers_once(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        ours = harness.keep(service.thread(service.chat()), "the answer you missed")
        theirs = harness.keep("another:42", "for another channel's bridge")
        service.meet()
        bridge()
        service.wait(lambda: service.texts(service.chat()) == ["the answer you missed"])
        service.wait(lambda: harness.confirmed == [ours])
        assert [a.id for a in harness.kept] == [theirs], "another channel's answer stays for its bridge"

    def test_a_harness_dying_mid_answer_says_so_and_its_answer_follows(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        harness.script = lambda text: Answer(["half an ", "answer"], crash_after=1)
        bridge()
        owner = service.chat()
        service.wait(lambda: harness.recovers >= 1)
        service.send("tell me")
        service.wait(lambda: service.texts(owner)[:1] == [f"half an\n\n{INTERRUPTED}"])
        service.wait(lambda: service.texts(owner)[1:] == ["half an answer"])
        service.wait(lambda: harness.kept == [])
        assert [r.text for r in harness.received] == ["tell me"], "the message is never sent twice"

    def test_a_program_holding_the_port_never_gets_the_key(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        harness.honest = False
        bridge()
        service.send("secret plans")
        service.wait(lambda: harness.proofs >= 2)
        assert not harness.saw_key()
        assert all("secret plans" not in json.dumps(headers) for _, headers in harness.requests)
        assert harness.received == []

    def test_an_answer_whose_harness_died_right_after_its_end_is_shown_once(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        harness.script = lambda text: Answer(["answer to ", text], undelivered=text == "first")
        bridge()
        owner = service.chat()
        service.send("first")
        service.wait(lambda: service.texts(owner) == ["answer to first"] and harness.kept)
        (undelivered,) = harness.kept  # the harness died before it noted the answer delivered
        harness.stop()
        tried = service.answering(owner)
        service.send("second")  # finds it gone: recovery asks once it is back
        service.wait(lambda: service.answering(owner) > tried)
        time.sleep(0.5)  # the bridge found nothing listening and holds the message
        harness.start()
        service.wait(lambda: harness.confirmed == [undelivered.id])
        service.wait(lambda: service.texts(owner) == ["answer to first", "answer to second"])
        assert [r.text for r in harness.messages] == ["first", "second"]

    def test_a_bridge_restarted_between_showing_and_confirming_shows_the_answer_once(
        self, service: Service, harness: ScriptedHarness, bridge: Start, folder: Path
    ) -> None:
        owner = service.chat()
        kept = harness.keep(service.thread(owner), "finished while nobody waited")
        service.meet()
        service.lose("send", delay=2)  # it lands at once; the bridge hears so 2 s later
        first = bridge(**service.patient)
        service.wait(lambda: service.texts(owner) == ["finished while nobody waited"])
        harness.stop()  # so the confirm can't reach it
        service.wait(lambda: (folder / FILE).exists() and kept in json.loads((folder / FILE).read_text())["shown"])
        first.stop()
        assert harness.confirmed == []
        harness.start()
        bridge()
        service.wait(lambda: harness.confirmed == [kept])
        assert service.texts(owner) == ["finished while nobody waited"]
        assert service.statuses("send") == [200], "sent once"

    def test_a_harness_dying_before_any_byte_gets_the_message_again_with_its_key(
        self, service: Service, harness: ScriptedHarness, bridge: Start
    ) -> None:
        harness.script = lambda text: Answer(["answered ", "once"], dropped=True)
        bridge()
        owner = service.chat()
        service.wait(lambda: harness.recovers >= 1)
        service.send("keep me once")
        service.wait(lambda: len(harness.received) == 2 and harness.kept == [])
        service.wait(lambda: service.texts(owner) == ["answered once"])
        first, again = harness.received
        assert first.key == again.key and again.repeat
        assert [r.text for r in harness.messages] == ["keep me once"]
        assert len(service.shown(owner)) == 1


class PairingScenarios:
    """`connect`: the owner paired by the code, in time, with a few tries; nobody else."""

    def test_the_owner_sends_the_code_and_is_paired(self, service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
        pairing = service.connecting(monkeypatch)
        code = pairing.code()
        service.send(code.lower().replace("-", " "))
        pairing.done()
        assert pairing.result is not None and pairing.result.section["owner"] == service.owner_id
        assert service.texts(service.chat()) == [PAIRED]
        assert any("Paired" in line and str(service.owner_id) in line for line in pairing.said), "the terminal says so"
        assert all(secret not in json.dumps(pairing.result.section) for secret in pairing.result.secrets.values())

    def test_a_wrong_code_is_told_and_the_right_one_still_pairs(
        self, service: Service, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        pairing = service.connecting(monkeypatch)
        code = pairing.code()
        service.send("AAAA-BBBB", stranger=True)
        service.wait(lambda: service.texts(service.chat(stranger=True)) == [WRONG])
        service.send(code)
        pairing.done()
        assert pairing.result is not None and pairing.result.section["owner"] == service.owner_id

    def test_wrong_tries_are_limited_even_when_the_next_is_right(
        self, service: Service, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        pairing = service.connecting(monkeypatch)
        code = pairing.code()
        stranger = service.chat(stranger=True)
        for guess in range(TRIES):
            service.send(f"GUESS-{guess:04d}", stranger=True)
        service.wait(lambda: len(service.texts(stranger)) == TRIES)
        service.send(code, stranger=True)
        service.wait(lambda: service.texts(stranger)[-1:] == [LIMITED])
        assert pairing.result is None, "a limited sender's message isn't even compared"
        service.send(code)
        pairing.done()
        assert pairing.result is not None and pairing.result.section["owner"] == service.owner_id

    def test_a_code_sent_in_a_group_pairs_nobody(self, service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
        pairing = service.connecting(monkeypatch, expires=3)
        service.send(pairing.code(), group=True)
        pairing.done()
        assert pairing.result is None and pairing.error is not None and "expired" in pairing.error.message

    def test_a_code_sent_after_it_expired_pairs_nobody(self, service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
        clock = Clock()
        pairing = service.connecting(monkeypatch, expires=60, clock=clock)
        code = pairing.code()
        clock.now += 61  # the code lapsed while connect still listens
        service.send(code)
        service.wait(lambda: service.texts(service.chat()) == [expired_text(service.channel)])  # read, and said so
        pairing.done()
        assert pairing.result is None
        assert pairing.error is not None and "expired" in pairing.error.message
        assert pairing.error.hint and f"lnk agent connect {service.channel}" in pairing.error.hint

    def test_a_bot_another_agent_has_is_refused_before_any_code(
        self, service: Service, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        pairing = service.connecting(monkeypatch, taken=True)
        pairing.done()
        assert pairing.error is not None and "another agent here has" in pairing.error.message
        assert not pairing.showed_a_code()

    def test_a_refused_token_says_so_without_printing_it(
        self, service: Service, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        pairing, token = service.refused(monkeypatch)
        pairing.done()
        assert pairing.error is not None and "refused" in pairing.error.message
        assert token not in str(pairing.error) and not pairing.showed_a_code()


def questions(service: Service, control: ControlSocket, count: int = 1) -> list[Shown]:
    """The `count` questions shown in the owner's chat, once they are and the bridge knows
    their messages: it polls again only once each question it listed was asked, so a press or
    reply right after a question shows never races the service's answer to the bridge."""
    service.wait(lambda: len([m for m in service.shown(service.chat()) if m.buttons]) == count)
    polls = control.polls
    service.wait(lambda: control.polls > polls)
    return [m for m in service.shown(service.chat()) if m.buttons]


def _now(service: Service, message: str) -> Shown:
    """The bot's message `message` in the owner's chat as it is now."""
    return next(m for m in service.shown(service.chat()) if m.id == message)


def asking(service: Service, control: ControlSocket, bridge: Start, *words: str) -> list[Question]:
    """A bridge asking the owner, and a tool call from the terminal waiting for them for each word."""
    service.meet()
    bridge(approvals=str(control.path))
    return [control.call("words", "erase", {"word": word}) for word in words]


def waiting(
    service: Service, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> tuple[Question, Shown]:
    """The owner's message "old" starts a turn whose tool call waits for them before the answer
    goes on (any other message is echoed). The call, and its question shown."""
    asked: list[Question] = []

    def turn(text: str) -> Answer:
        if text != "old":
            return echo(text)
        question = control.call("words", "erase", {"word": text})
        asked.append(question)
        return Answer(["Done with ", text], hold=control.decided(question.id))

    harness.script = turn
    bridge(approvals=str(control.path))
    service.send("old")
    (shown,) = questions(service, control)
    return asked[0], shown


class AskingScenarios:
    """Tool calls waiting for the owner, asked in their direct chat with Allow and Deny buttons and
    answered there by the owner alone; the answer goes to the control socket, never the harness."""

    def test_the_owner_presses_allow_and_the_turn_goes_on(
        self, service: Service, harness: ScriptedHarness, control: ControlSocket, bridge: Start
    ) -> None:
        call, question = waiting(service, harness, control, bridge)
        assert question.text == call.wording() and question.buttons == ("Allow", "Deny")
        service.press(question.id, "allow")
        service.wait(lambda: service.texts(service.chat())[-1] == "Done with old")
        assert control.answered == {call.id: True}
        service.wait(lambda: _now(service, question.id).text == f"{call.wording()}\n\nAllowed.")
        assert _now(service, question.id).buttons == ()
        assert [r.text for r in harness.received] == ["old"]

    def test_a_plain_no_answers_and_is_never_carried(
        self, service: Service, harness: ScriptedHarness, control: ControlSocket, bridge: Start
    ) -> None:
        call, question = waiting(service, harness, control, bridge)
        service.send("No")
        service.wait(lambda: service.texts(service.chat())[-1] == "Done with old")
        assert control.answered == {call.id: False}
        service.wait(lambda: _now(service, question.id).text.endswith("Denied."))
        assert _now(service, question.id).buttons == ()
        assert [r.text for r in harness.received] == ["old"], "the owner's no went to Link, not to the agent"
        service.send("no")
        service.wait(lambda: service.texts(service.chat())[-1] == "you said: no")
        assert [r.text for r in harness.received] == ["old", "no"], "with nothing asked, a no is a message"

    def test_a_strangers_press_or_yes_is_no_answer(
        self, service: Service, harness: ScriptedHarness, control: ControlSocket, bridge: Start
    ) -> None:
        call, question = waiting(service, harness, control, bridge)
        service.press(question.id, "allow", stranger=True)
        service.send("yes", stranger=True)
        service.send("yes", group=True)
        service.wait(lambda: len(harness.received) == 2)
        service.press(question.id, "deny")
        service.wait(lambda: _now(service, question.id).text.endswith("Denied."))
        assert control.answered == {call.id: False}, "only the owner's press counted"
        assert service.shown(service.chat(stranger=True)) == []
        assert [r.text for r in harness.received] == ["old", "yes"], "the owner's mention in a group is a message"

    def test_a_call_answered_in_the_terminal_loses_its_buttons(
        self, service: Service, harness: ScriptedHarness, control: ControlSocket, bridge: Start
    ) -> None:
        (called,) = asking(service, control, bridge, "a turn from the terminal")
        (question,) = questions(service, control)
        assert question.text == called.wording(), "asked even when no message of the channel's started the turn"
        control.elsewhere(called.id)
        service.wait(lambda: _now(service, question.id).buttons == ())
        assert _now(service, question.id).text == f"{called.wording()}\n\n{Said.GONE.value}"
        assert control.answered == {} and control.refused_posts == 0

    def test_a_reply_to_a_question_answers_that_one(
        self, service: Service, harness: ScriptedHarness, control: ControlSocket, bridge: Start
    ) -> None:
        (first,) = asking(service, control, bridge, "a")
        questions(service, control)
        second = control.call("words", "erase", {"word": "b"})
        _, asked_second = questions(service, control, 2)
        service.send("yes", reply_to=asked_second.id)
        service.wait(lambda: _now(service, asked_second.id).buttons == ())
        assert control.answered == {second.id: True} and control.waiting == [first.id]
        assert service.shown(service.chat())[0].buttons == ("Allow", "Deny")
        assert harness.received == []


class Scenarios(BridgeScenarios, PairingScenarios, AskingScenarios):
    """All of them, for a channel's `tests/test_scenarios.py`."""
