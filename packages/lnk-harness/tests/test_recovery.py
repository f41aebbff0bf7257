"""A harness killed mid-turn finishes the turn after its restart, and the answer arrives once."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from conftest import MAIN
from helpers import Harness, ask, crafted, events, kinds, send, settings_for, wait_until
from listing import tools_listed
from mcp_tools import ToolServers
from proxy import KeyAddingProxy

from link_conformance.provider import Reply, StandInProvider, ToolCall
from link_plugin import wire
from link_plugin.endpoint import EndpointUnreachable
from link_plugin.harness import Turns
from link_plugin.providers import PROVIDERS
from lnk_harness.events import Answer, Delivered, MessageIn, Output
from lnk_harness.turns import LOST_MADE
from lnk_testing.relay import Relay


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


def lose_mid_call(harness: Harness, servers: ToolServers, strike: Callable[[], None]) -> None:
    """Ask for the build to be waited for (thread slack:D01), and `strike` while the tool waits."""
    calls_before = len(servers.called("wait"))
    striking = threading.Thread(
        target=lambda: (wait_until(lambda: len(servers.called("wait")) > calls_before, what="the tool call"), strike()),
        daemon=True,
    )
    striking.start()
    send_then_lose(harness, "wait for the build", "slack:D01")
    striking.join()


def kill_while_answering(harness: Harness, provider: StandInProvider, text: str, thread: str) -> None:
    """Send a message and kill -9 the harness while the model answers it."""
    before = len(provider.requests)
    killer = threading.Thread(target=lambda: (provider.wait_for_requests(before + 1), harness.kill()), daemon=True)
    killer.start()
    send_then_lose(harness, text, thread)
    killer.join()


def test_kill_mid_turn_then_restart_answers_once_via_recover(tmp_path: Path, provider: StandInProvider) -> None:
    hold = threading.Event()
    provider.script(Reply(text="never finished", hold=hold), Reply(text="the answer after the crash"))
    harness = Harness([settings_for(tmp_path, MAIN, provider.url)]).start()
    before = len(provider.requests)
    try:
        kill_while_answering(harness, provider, "what's on my calendar?", "telegram:42")
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
    settings = settings_for(tmp_path, MAIN, provider.url, tools={"slow": servers.address("slow")})
    harness = Harness([settings]).start()
    tools_listed(harness, provider)
    provider.script(
        Reply(text="Let me wait.", tool_calls=[ToolCall("wait", {"text": "for the build"})]),
        Reply(text="The wait was interrupted; I did not start it again."),
    )
    before = len(provider.requests)
    calls_before = len(servers.called("wait"))
    try:
        lose_mid_call(harness, servers, harness.kill)
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
    provider.script(Reply(text="answer to the first"), Reply(text="answer to the second"))
    with harness:
        # Left once the harness is listening, so its start's own recovery (done before it listens)
        # never finishes the turn first: the new message must, however slow the machine.
        conversation.events.append(MessageIn(text="first, before the crash"))
        dead_turn(conversation.folder)
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


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_killed_right_after_the_answer_was_read_it_is_recovered_by_the_same_id(
    tmp_path: Path, provider: StandInProvider, stream: bool
) -> None:
    """Killed the moment the client read `data: [DONE]` (or the whole completion): the answer is
    either known delivered or handed over by recovery by the very id the client already has, so
    a bridge that showed it confirms it and shows nothing twice. Never neither."""
    harness = Harness([settings_for(tmp_path, MAIN, provider.url)]).start()
    handed_over = 0
    try:
        for run in range(5):
            thread = f"kit:done-{run}"
            provider.script(Reply(text=f"Answer {run}, read whole.", chunks=3))
            answered = send(harness, f"question {run}", thread, stream=stream, on_done=harness.kill)
            assert answered.complete and answered.answer_id and set(answered.ids) == {answered.answer_id}
            harness.start()
            folder = harness.conversation(thread)
            wait_until(lambda: not (folder / "turn.json").exists(), what="the dead turn settled")  # noqa: B023
            listed = [a for a in recovered(harness) if a.thread == thread]
            delivered = [e for e in events(folder) if e["kind"] == "delivered"]
            assert [a.id for a in listed] in ([], [answered.answer_id]), "by the id the stream carried"
            assert bool(listed) != bool(delivered), f"run {run}: delivered {delivered}, handed over {listed}"
            if listed:
                handed_over += 1
                assert listed[0].content == answered.text
                confirm(harness, [listed[0].id])
    finally:
        harness.stop()
    print(f"{handed_over} of 5 answers were handed over again after the kill")


def test_killed_after_keeping_a_message_it_is_kept_once_when_sent_again(
    tmp_path: Path, provider: StandInProvider
) -> None:
    """The harness dies with a message kept and not a byte of its answer sent (it waited for the
    turn before it): the bridge sends it again, with its key. Kept once, shown to the model once,
    answered once."""
    hold = threading.Event()
    provider.script(Reply(text="never finished", hold=hold), Reply(text="Answered after the restart."))
    turns = Turns(busy="queue", renew=0.2, lapse=1.0)  # type: ignore[arg-type]
    harness = Harness([settings_for(tmp_path, MAIN, provider.url, turns=turns)]).start()
    folder = harness.conversation("telegram:31")
    before = len(provider.requests)
    failed: list[BaseException] = []

    def lose(text: str, key: str) -> None:
        try:
            send(harness, text, "telegram:31", message_id=key)
        except httpx.HTTPError as exc:
            failed.append(exc)

    first = threading.Thread(target=lose, args=("first message", "u-1"))
    first.start()
    provider.wait_for_requests(before + 1)
    second = threading.Thread(target=lose, args=("second message", "u-2"))
    second.start()
    try:
        wait_until(lambda: kinds(folder) == ["message", "message"], what="the second message kept")
        harness.kill()
        first.join()
        second.join()
        assert len(failed) == 2, "neither got an answer: the second not even a head"
        hold.set()
        harness.start()
        again = send(harness, "second message", "telegram:31", message_id="u-2")
        wait_until(lambda: not (folder / "turn.json").exists(), what="the turns settled")
        # Whichever finished the dead turn (the restart, or this request taking it over), each
        # message was kept once, shown to the model once and answered once, and this request got
        # the answer to its own, by that answer's id.
        assert kinds(folder).count("message") == 2
        said = [m["content"] for m in provider.requests[-1].json["messages"] if m["role"] == "user"]
        assert said == ["first message", "second message"], "the model saw each once"
        answers = [e for e in events(folder) if e["kind"] == "answer"]
        assert sorted(m for a in answers for m in a["messages"]) == [1, 2]
        its = next(a for a in answers if 2 in a["messages"])
        assert (again.status, again.text, again.answer_id) == (200, its["text"], f"telegram:31/{its['name']}")
    finally:
        hold.set()
        harness.stop()


def test_a_turn_killed_mid_answer_is_finished_at_once_not_after_the_lapse(
    tmp_path: Path, provider: StandInProvider
) -> None:
    """Its holder provably gone (the lock it kept went with it), the restarted harness finishes the
    turn without waiting out the lease's minute."""
    hold = threading.Event()
    provider.script(Reply(text="cut by the kill", hold=hold), Reply(text="finished at once"))
    settings = settings_for(tmp_path, MAIN, provider.url, turns=Turns(renew=0.2, lapse=60.0))
    harness = Harness([settings]).start()
    try:
        kill_while_answering(harness, provider, "a question", "telegram:41")
        hold.set()
        lease = json.loads((harness.conversation("telegram:41") / "turn.json").read_text())
        assert lease["boot"] and lease["lock"], "the holder recorded where it runs and the lock it keeps"
        harness.start()
        wait_until(lambda: recovered(harness), timeout=20, what="the answer, well before the 60 s lapse")
        assert [a.content for a in recovered(harness)] == ["finished at once"]
    finally:
        hold.set()
        harness.stop()


def test_the_sandbox_ending_mid_answer_leaves_the_turn_to_the_next_harness(
    tmp_path: Path, provider: StandInProvider
) -> None:
    """A sandbox ends from its way out inward (its relay, bubblewrap or `lnk-sandbox run` killed):
    the model's connection breaks before the harness ends with the rest. The harness writes no
    error for an answer; finding the proxy gone, it ends, and the harness started after it in a new
    sandbox answers the turn, once."""
    openai = PROVIDERS["openai"]
    # Whether the first request reached the model before the way out ended, the answer is the same.
    provider.script(*[Reply(text="the answer after the sandbox")] * 2)
    with KeyAddingProxy({openai.host: provider.origin}, key="sk-the-proxy-adds") as proxy:
        way_out = Relay(urlsplit(proxy.url).port or 0).start()
        settings = settings_for(tmp_path, MAIN, openai.url, model_name="gpt-6-luna")
        harness = Harness([settings], env=_behind(f"http://127.0.0.1:{way_out.port}")).start()
        try:
            way_out.hold(b"/chat/completions")
            ending = threading.Thread(target=lambda: (way_out.holding.wait(20), way_out.end()), daemon=True)
            ending.start()
            send_then_lose(harness, "tell me about the lighthouse", "telegram:7")
            ending.join()
            assert harness.process is not None
            harness.process.wait(timeout=20)  # it ends of itself, as Link stops it
            folder = harness.conversation("telegram:7")
            assert "answer" not in kinds(folder), f"an answer was written: {events(folder)}"
            assert "the sandbox's proxy is gone" in harness.output()

            harness.env = _behind(proxy.url)  # the new sandbox's way out
            harness.start()
            wait_until(lambda: recovered(harness), what="the recovered answer")
            answers = recovered(harness)
            assert [a.content for a in answers] == ["the answer after the sandbox"]
            assert kinds(folder).count("answer") == 1
        finally:
            way_out.stop()
            harness.stop()


def _behind(proxy: str) -> dict[str, str]:
    """A harness's environment in Link's sandbox: everything through its proxy, the loopback too."""
    return {"LNK_PROXY": proxy, "HTTP_PROXY": proxy, "http_proxy": proxy, "NO_PROXY": "", "no_proxy": ""}


def test_a_tool_call_cut_is_the_tools_failure_unless_the_sandbox_ends_then_not_made_again(
    tmp_path: Path, provider: StandInProvider, servers: ToolServers
) -> None:
    """Tools are reached through the sandbox's way out too (Link's proxy serves them on its port).
    A call's connection cut while the way out stands is the tool's failure: the model is told so,
    and the turn answers. Cut by the sandbox ending, the harness writes no result for the call;
    finding the proxy gone, it ends, and the next harness tells the model the call was made and
    not made again, as after any harness that died."""
    servers.release.clear()
    slow = urlsplit(servers.address("slow"))
    way_out = Relay(slow.port or 0).start()
    settings = settings_for(tmp_path, MAIN, provider.url, tools={"slow": f"http://127.0.0.1:{way_out.port}{slow.path}"})
    harness = Harness([settings], env={"LNK_PROXY": f"http://127.0.0.1:{way_out.port}"}).start()
    tools_listed(harness, provider)
    wait = ToolCall("wait", {"text": "for the build"})
    provider.script(
        Reply(text="Let me wait.", tool_calls=[wait]),
        Reply(text="The wait failed."),
        Reply(text="Let me wait.", tool_calls=[wait]),
        Reply(text="The wait was cut short; I did not start it again."),
    )
    try:
        way_out.hold(b"tools/call")
        threading.Thread(target=lambda: (way_out.holding.wait(20), way_out.cut()), daemon=True).start()
        status, text = asyncio.run(ask(harness.client(), "wait for the build", "slack:D02"))
        assert (status, text) == (200, "Let me wait.\n\nThe wait failed.")
        tool_answer = [m for m in provider.requests[-1].json["messages"] if m["role"] == "tool"]
        assert len(tool_answer) == 1
        assert tool_answer[0]["content"].startswith("The tool wait could not be called: MCPError: Connection closed")

        before = len(provider.requests)
        calls_before = len(servers.called("wait"))
        way_out.hold(b"tools/call")
        lose_mid_call(harness, servers, way_out.end)
        assert harness.process is not None
        harness.process.wait(timeout=20)  # it ends of itself, as Link stops it
        servers.release.set()
        folder = harness.conversation("slack:D01")
        assert kinds(folder) == ["message", "output", "call"], "no result was written for the cut call"
        assert "the sandbox's proxy is gone" in harness.output()

        # The new sandbox's way out: the tool at its address again, no proxy standing in between.
        harness.settings = [settings.model_copy(update={"tools": {"slow": servers.address("slow")}})]
        harness.env = {}
        harness.start()
        wait_until(lambda: recovered(harness), what="the recovered answer")
        answers = recovered(harness)
        assert [a.content for a in answers] == ["Let me wait.\n\nThe wait was cut short; I did not start it again."]
        assert len(servers.called("wait")) == calls_before + 1, "the tool call was not made again"
        tool_answer = [m for m in provider.requests[-1].json["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in tool_answer] == [LOST_MADE]
        assert len(provider.requests) == before + 2
    finally:
        servers.release.set()
        way_out.stop()
        harness.stop()
