"""Asking the owner in their chat for tool calls waiting on the agent's control socket, served
by a stand-in that speaks the core's approvals protocol over a real unix socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from test_bridge_answer import Chat
from test_bridge_carry import until

from link_plugin.approvals import ApprovalsClient, Question
from link_plugin.bridge.asking import ALLOW, DENY, Asking, Said
from link_plugin.bridge.retry import Interrupted
from link_plugin.bridge.rules import Incoming
from lnk_testing.approvals import ControlSocket

OWNER = Incoming(sender="42", direct=True)
STRANGER = Incoming(sender="666", direct=True)
OWNER_IN_A_GROUP = Incoming(sender="42", direct=False, mentioned=True)


@dataclass
class OwnerChat(Chat):
    """The owner's direct chat: questions with their buttons, and how each ended."""

    buttons: dict[str, bool] = field(default_factory=dict)
    """Whether each question's message still shows its buttons."""

    async def ask(self, question: Question) -> str:
        message = await self.send(question.wording())
        self.buttons[message] = True
        return message

    async def settle(self, message: str, text: str) -> None:
        await self.edit(message, text)
        self.buttons[message] = False

    def question(self, number: int) -> str:
        """The message id of the `number`th question asked (from 1)."""
        return [m for m in self.messages if m in self.buttons][number - 1]


@pytest.fixture
def control() -> Iterator[ControlSocket]:
    with ControlSocket.temporary() as served:
        yield served


@asynccontextmanager
async def asking(
    control: ControlSocket, chat: OwnerChat, log: list[str] | None = None, *, busy: float = 0.05, idle: float = 0.05
) -> AsyncIterator[Asking]:
    said = log if log is not None else []
    made = Asking(ApprovalsClient(str(control.path)), chat, "42", said.append, busy=busy, idle=idle)
    polling = asyncio.create_task(made.run())
    try:
        yield made
    finally:
        polling.cancel()


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), 20))


def test_a_waiting_call_is_asked_once_and_the_owners_press_answers_it(control: ControlSocket) -> None:
    chat = OwnerChat()
    question = control.call("words", "erase", {"word": "old"})

    async def main() -> None:
        async with asking(control, chat) as ask:
            await until(lambda: chat.buttons)
            polls = control.polls
            await until(lambda: control.polls >= polls + 3)
            assert len(chat.messages) == 1, "asked once, however often it is polled"
            assert await ask.press(OWNER, chat.question(1), ALLOW) is Said.ALLOWED
            await until(lambda: control.polls >= polls + 6)

    run(main)
    assert control.answered == {question.id: True}
    assert chat.finals == [f"{question.wording()}\n\nAllowed."] and chat.buttons == {"1": False}


def test_nobody_but_the_owner_in_their_direct_chat_answers(control: ControlSocket) -> None:
    chat = OwnerChat()
    control.call("words", "erase", {"word": "old"})

    async def main() -> None:
        async with asking(control, chat) as ask:
            await until(lambda: chat.buttons)
            message = chat.question(1)
            assert await ask.press(STRANGER, message, ALLOW) is None
            assert await ask.press(OWNER_IN_A_GROUP, message, ALLOW) is None
            assert not await ask.reply(STRANGER, "yes")
            assert not await ask.reply(OWNER_IN_A_GROUP, "yes", message)
            assert await ask.press(OWNER, message, "delete everything") is None
            assert chat.buttons == {message: True}

    run(main)
    assert control.answered == {} and len(control.waiting) == 1


def test_the_owners_yes_or_no_answers_the_oldest_question_or_the_one_replied_to(control: ControlSocket) -> None:
    chat = OwnerChat()
    first = control.call("words", "erase", {"word": "a"})
    second = control.call("words", "erase", {"word": "b"})
    third = control.call("files", "delete", {"path": "/c"})

    async def main() -> None:
        async with asking(control, chat) as ask:
            await until(lambda: len(chat.buttons) == 3)
            assert not await ask.reply(OWNER, "what would that erase?"), "a question back goes to the agent"
            assert await ask.reply(OWNER, "yes", chat.question(3))
            assert await ask.reply(OWNER, "No.")
            assert await ask.reply(OWNER, "ok")
            assert not await ask.reply(OWNER, "yes"), "with nothing asked, a yes is a message like any other"

    run(main)
    assert control.answered == {third.id: True, first.id: False, second.id: True}
    assert [texts[-1].rsplit("\n\n", 1)[1] for texts in chat.messages.values()] == ["Denied.", "Allowed.", "Allowed."]


def test_a_call_answered_elsewhere_or_expired_loses_its_buttons_and_isnt_asked_again(
    control: ControlSocket,
) -> None:
    chat = OwnerChat()
    question = control.call("words", "erase", {"word": "old"})

    async def main() -> None:
        async with asking(control, chat) as ask:
            await until(lambda: chat.buttons)
            control.elsewhere(question.id)
            await until(lambda: chat.buttons == {"1": False})
            assert await ask.press(OWNER, "1", DENY) is Said.GONE, "a press that crossed the end is told so"
            assert not await ask.reply(OWNER, "no")
            polls = control.polls
            await until(lambda: control.polls >= polls + 3)

    run(main)
    assert chat.finals == [f"{question.wording()}\n\n{Said.GONE.value}"]
    assert control.answered == {} and control.refused_posts == 0


def test_a_reply_to_an_ended_question_never_answers_another(control: ControlSocket) -> None:
    chat = OwnerChat()
    ended = control.call("words", "erase", {"word": "a"})

    async def main() -> None:
        async with asking(control, chat) as ask:
            await until(lambda: chat.buttons)
            control.elsewhere(ended.id)
            await until(lambda: chat.buttons == {"1": False})
            control.call("words", "erase", {"word": "b"})
            await until(lambda: len(chat.buttons) == 2)
            words = await chat.send("Shall I go on?")  # the agent's own message
            assert not await ask.reply(OWNER, "yes", words), "a reply to the agent's words is the agent's"
            assert await ask.reply(OWNER, "yes", chat.question(1))

    run(main)
    assert control.answered == {}, "the open question still waits for its own answer"
    assert chat.buttons == {"1": False, "2": True}
    assert chat.finals[-1] == Said.GONE.value


def test_an_answer_that_comes_too_late_is_told_and_not_passed_on(control: ControlSocket) -> None:
    chat = OwnerChat()
    question = control.call("words", "erase", {"word": "old"})

    async def main() -> None:
        async with asking(control, chat, busy=30, idle=30) as ask:
            await until(lambda: chat.buttons)
            control.elsewhere(question.id)  # before the next poll could see it
            assert await ask.reply(OWNER, "yes"), "meant as an answer: never carried"

    run(main)
    assert control.refused_posts == 1 and control.answered == {}
    assert chat.finals == [f"{question.wording()}\n\n{Said.GONE.value}", Said.GONE.value]


def test_no_control_socket_then_one_then_none_again(control: ControlSocket) -> None:
    chat = OwnerChat()
    log: list[str] = []
    control.stop()

    async def main() -> None:
        async with asking(control, chat, log) as ask:
            await until(lambda: log)
            await asyncio.sleep(0.3)
            assert len(log) == 1, "said once, not at every poll"
            await asyncio.to_thread(control.start)
            question = control.call("words", "erase", {"word": "old"})
            await until(lambda: chat.buttons)
            await asyncio.to_thread(control.stop)
            assert await ask.press(OWNER, "1", ALLOW) is Said.UNREACHABLE
            assert await ask.reply(OWNER, "yes")
            assert chat.buttons == {"1": True}, "still open: the owner can try again"
            await asyncio.to_thread(control.start)  # a restarted core: nothing waits any more
            await until(lambda: chat.buttons == {"1": False})
            assert chat.finals[0] == f"{question.wording()}\n\n{Said.GONE.value}"

    run(main)
    assert chat.finals[1] == Said.UNREACHABLE.value


def test_polls_are_frequent_while_a_message_is_carried_and_rare_otherwise(control: ControlSocket) -> None:
    chat = OwnerChat()

    async def main() -> None:
        async with asking(control, chat, busy=0.05, idle=30) as ask:
            await until(lambda: control.polls == 1)
            await asyncio.sleep(0.5)
            assert control.polls == 1, "idle: one poll, the next one much later"
            with ask.busy():
                await until(lambda: control.polls >= 5, timeout=2)
                control.call("words", "erase", {"word": "now"})
                await until(lambda: chat.buttons, timeout=1)
            polls = control.polls
            await asyncio.sleep(0.5)
            assert control.polls <= polls + 1

    run(main)


def test_a_question_that_cant_be_shown_is_retried_then_left(control: ControlSocket) -> None:
    chat = OwnerChat()
    chat.troubles["send"] = [Interrupted("the network broke"), ValueError("the chat refused it")]
    first = control.call("words", "erase", {"word": "a"})
    second = control.call("words", "erase", {"word": "b"})
    log: list[str] = []

    async def main() -> None:
        async with asking(control, chat, log):
            await until(lambda: chat.buttons)
            await asyncio.sleep(0.3)
            assert "couldn't be asked" in log[0]

    run(main)
    assert [texts[0] for texts in chat.messages.values()] == [second.wording()]
    assert control.waiting == [first.id, second.id], "unanswered: it waits for the terminal or its time"
