"""A harness killed mid-turn finishes the turn after its restart, and the answer arrives once."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx
import pytest
from conftest import MAIN
from helpers import Harness, ask, events, kinds, settings_for, wait_until
from mcp_tools import ToolServers

from link_conformance.provider import Reply, StandInProvider, ToolCall
from link_plugin import wire
from link_plugin.endpoint import EndpointUnreachable
from link_plugin.harness import Turns
from lnk_harness.conversation import Conversation
from lnk_harness.events import Answer, Delivered, MessageIn, Output


def recovered(harness: Harness) -> list[wire.Undelivered]:
    return asyncio.run(harness.client().recover())


def confirm(harness: Harness, ids: list[str]) -> None:
    asyncio.run(harness.client().confirm(ids))


def send_then_lose(harness: Harness, text: str, thread: str) -> None:
    """Send a message whose answer the harness can't finish: it is killed while answering."""

    async def go() -> None:
        async with harness.client().chat(text, wire.Thread.parse(thread)) as reply:
            await reply.text()

    with pytest.raises(EndpointUnreachable):
        asyncio.run(go())


def test_kill_mid_turn_then_restart_answers_once_via_recover(tmp_path: Path, provider: StandInProvider) -> None:
    hold = threading.Event()
    provider.script(Reply(text="never finished", hold=hold), Reply(text="the answer after the crash"))
    harness = Harness([settings_for(tmp_path, MAIN, provider.url)]).start()
    before = len(provider.requests)
    try:
        killer = threading.Thread(target=lambda: (provider.wait_for_requests(before + 1), harness.kill()), daemon=True)
        killer.start()
        send_then_lose(harness, "what's on my calendar?", "telegram:42")
        killer.join()
        hold.set()
        folder = harness.conversation("telegram:42")
        assert kinds(folder) == ["message"], "the message was kept before the model was asked"
        assert (folder / "turn.json").exists(), "the dead turn's lease is still there"

        harness.start()
        wait_until(lambda: recovered(harness), what="the recovered answer")
        answers = recovered(harness)
        assert [a.content for a in answers] == ["the answer after the crash"]
        assert answers[0].thread == "telegram:42"
        assert len(provider.requests) == before + 2
        assert "what's on my calendar?" in provider.requests[-1].text

        assert recovered(harness) == answers, "handed over again until the bridge confirms"
        confirm(harness, [answers[0].id])
        assert recovered(harness) == []
        harness.restart()
        assert recovered(harness) == [], "a confirmed answer is never handed over again"
        assert len(provider.requests) == before + 2, "no second answer was asked for"
        assert not (folder / "turn.json").exists()
        assert kinds(folder)[-2:] == ["answer", "delivered"]
    finally:
        hold.set()
        harness.stop()


def test_kill_mid_tool_call_answers_it_not_made_again(
    tmp_path: Path, provider: StandInProvider, servers: ToolServers
) -> None:
    servers.release.clear()
    provider.script(
        Reply(text="Let me wait.", tool_calls=[ToolCall("wait", {"text": "for the build"})]),
        Reply(text="The wait was interrupted; I did not start it again."),
    )
    settings = settings_for(tmp_path, MAIN, provider.url, tools={"slow": servers.address("slow")})
    harness = Harness([settings]).start()
    before = len(provider.requests)
    calls_before = len(servers.called("wait"))
    try:
        killer = threading.Thread(
            target=lambda: (
                wait_until(lambda: len(servers.called("wait")) > calls_before, what="the tool call"),
                harness.kill(),
            ),
            daemon=True,
        )
        killer.start()
        send_then_lose(harness, "wait for the build", "slack:D01")
        killer.join()
        servers.release.set()
        folder = harness.conversation("slack:D01")
        assert kinds(folder) == ["message", "output", "call"]

        harness.start()
        wait_until(lambda: recovered(harness), what="the recovered answer")
        answers = recovered(harness)
        assert len(answers) == 1
        assert answers[0].content == "Let me wait.\n\nThe wait was interrupted; I did not start it again."
        assert len(servers.called("wait")) == calls_before + 1, "the tool call was not made again"
        last = provider.requests[-1].json["messages"]
        tool_answer = [m for m in last if m["role"] == "tool"]
        assert len(tool_answer) == 1 and "not made again" in tool_answer[0]["content"]
        assert len(provider.requests) == before + 2
        result = [e for e in events(folder) if e["kind"] == "result"]
        assert result and result[0]["lost"] is True
        confirm(harness, [answers[0].id])
        assert recovered(harness) == []
    finally:
        servers.release.set()
        harness.stop()


def dead_turn(folder: Path) -> None:
    """The lease a process left when it died: long lapsed."""
    (folder / "turn.json").write_text('{"holder": "gone/1/a/b", "taken": 1.0, "renewed": 1.0}')


def crafted(tmp_path: Path, provider: StandInProvider, thread: str) -> tuple[Harness, Conversation]:
    settings = settings_for(tmp_path, MAIN, provider.url)
    conversation = Conversation(Path(settings.folders.chats), wire.Thread.parse(thread), settings.turns)
    return Harness([settings]), conversation


def test_a_turn_that_had_answered_and_delivered_only_lets_go(tmp_path: Path, provider: StandInProvider) -> None:
    harness, conversation = crafted(tmp_path, provider, "kit:done")
    log = conversation.events
    log.append(MessageIn(text="hello"))
    log.append(Output(turn="dead", took=[1], text="hi there"))
    answer = log.append(Answer(turn="dead", messages=[1], text="hi there", waited=True))
    log.append(Delivered(answer=answer, via="request"))
    dead_turn(conversation.folder)
    before = len(provider.requests)
    with harness:
        wait_until(lambda: not (conversation.folder / "turn.json").exists(), what="the lease let go")
        assert recovered(harness) == []
    assert len(provider.requests) == before, "never a second answer"
    assert kinds(conversation.folder) == ["message", "output", "answer", "delivered"]


def test_an_answer_finished_but_not_known_delivered_is_handed_over_once(
    tmp_path: Path, provider: StandInProvider
) -> None:
    harness, conversation = crafted(tmp_path, provider, "kit:undelivered")
    conversation.events.append(MessageIn(text="hello"))
    conversation.events.append(Output(turn="dead", took=[1], text="the answer"))
    conversation.events.append(Answer(turn="dead", messages=[1], text="the answer", waited=True))
    dead_turn(conversation.folder)
    before = len(provider.requests)
    with harness:
        wait_until(lambda: recovered(harness), what="the kept answer")
        answers = recovered(harness)
        assert [a.content for a in answers] == ["the answer"]
        confirm(harness, [a.id for a in answers])
        assert recovered(harness) == []
    assert len(provider.requests) == before, "the model is not asked again"


def test_a_message_that_steered_into_a_dead_turn_is_answered_with_it(tmp_path: Path, provider: StandInProvider) -> None:
    harness, conversation = crafted(tmp_path, provider, "kit:steered")
    conversation.events.append(MessageIn(text="book a table"))
    conversation.events.append(Output(turn="dead", took=[1], text="Booking."))
    conversation.events.append(MessageIn(text="for four, please"))
    dead_turn(conversation.folder)
    provider.script(Reply(text="A table for four at eight."))
    before = len(provider.requests)
    with harness:
        wait_until(lambda: recovered(harness), what="the recovered answer")
        assert [a.content for a in recovered(harness)] == ["Booking.\n\nA table for four at eight."]
    assert len(provider.requests) == before + 1
    shown = [m["content"] for m in provider.requests[-1].json["messages"][1:]]
    assert shown == ["book a table", "Booking.", "for four, please"]
    answer = [e for e in events(conversation.folder) if e["kind"] == "answer"]
    assert answer[0]["messages"] == [1, 3] and answer[0]["waited"] is False, "events 1 and 3: both messages"


def test_a_new_message_finishes_the_dead_turn_first(tmp_path: Path, provider: StandInProvider) -> None:
    harness, conversation = crafted(tmp_path, provider, "kit:next")
    conversation.events.append(MessageIn(text="first, before the crash"))
    dead_turn(conversation.folder)
    provider.script(Reply(text="answer to the first"), Reply(text="answer to the second"))
    with harness:
        status, text = asyncio.run(ask(harness.client(), "second, after it", "kit:next"))
        assert (status, text) == (200, "answer to the second")
        assert [a.content for a in recovered(harness)] == ["answer to the first"]
    shown = [m["content"] for m in provider.requests[-1].json["messages"][1:]]
    assert shown == ["first, before the crash", "answer to the first", "second, after it"]


def test_a_harness_stopped_mid_turn_hands_the_turn_to_its_next_start(tmp_path: Path, provider: StandInProvider) -> None:
    """Stopped (not killed) mid-answer, it leaves the lease lapsed: the next start finishes the
    turn at once, without waiting out a minute's lapse."""
    hold = threading.Event()
    provider.script(Reply(text="cut by the stop", hold=hold), Reply(text="finished after the restart"))
    settings = settings_for(tmp_path, MAIN, provider.url, turns=Turns(renew=0.2, lapse=60.0))
    harness = Harness([settings]).start()
    before = len(provider.requests)
    headers = harness.headers(**{wire.THREAD: "kit:stopped"})
    body = {"model": "link", "stream": True, "messages": [{"role": "user", "content": "a long question"}]}
    try:
        with httpx.stream("POST", f"{harness.origin}/v1/chat/completions", headers=headers, json=body) as response:
            assert response.status_code == 200
            provider.wait_for_requests(before + 1)
            assert harness.process is not None
            harness.process.terminate()
        harness.process.wait(timeout=15)
        hold.set()
        started = time.monotonic()
        harness.start()
        wait_until(lambda: recovered(harness), timeout=10, what="the handed-over turn's answer")
        assert time.monotonic() - started < 10, "it did not wait out the lapse"
        assert [a.content for a in recovered(harness)] == ["finished after the restart"]
    finally:
        hold.set()
        harness.stop()
