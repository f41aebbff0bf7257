"""One turn per conversation: steer, queue and stop; the lease; two processes on one conversation."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from collections.abc import Awaitable
from contextlib import suppress
from pathlib import Path

import httpx
import pytest
from conftest import MAIN
from helpers import Harness, ask, events, kinds, settings_for, transcript, wait_until

from link_conformance.provider import Reply, StandInProvider
from link_plugin import wire
from link_plugin.harness import Turns


def harness_with(tmp_path: Path, provider: StandInProvider, busy: str) -> Harness:
    turns = Turns(busy=busy, renew=0.2, lapse=1.0)  # type: ignore[arg-type]
    return Harness([settings_for(tmp_path, MAIN, provider.url, turns=turns)])


async def two_messages(
    harness: Harness, provider: StandInProvider, thread: str
) -> tuple[tuple[int, str], tuple[int, str]]:
    """The second message arrives while the model is answering the first."""
    before = len(provider.requests)
    first = asyncio.create_task(ask(harness.client(), "first message", thread))
    await asyncio.to_thread(provider.wait_for_requests, before + 1)
    second = asyncio.create_task(ask(harness.client(), "second message", thread))
    return await first, await second


def release_when_kept(folder: Path, count: int, hold: threading.Event) -> None:
    """Let the held answer go once the conversation has kept `count` messages."""
    wait_until(lambda: kinds(folder).count("message") >= count, timeout=60, what=f"{count} messages kept")
    hold.set()


def answers(folder: Path) -> list[dict[str, object]]:
    return [e for e in events(folder) if e["kind"] == "answer"]


@pytest.mark.parametrize(
    ("busy", "first", "second", "answered"),
    [
        # steer: the second joins the running turn; its answer comes on the first request
        ("steer", (200, "First answer.\n\nSecond answer."), (202, ""), [[1, 2]]),
        # queue: each waits for its own turn and gets its own answer
        ("queue", (200, "First answer."), (200, "Second answer."), [[1], [2]]),
    ],
)
def test_a_message_during_a_turn(
    tmp_path: Path,
    provider: StandInProvider,
    busy: str,
    first: tuple[int, str],
    second: tuple[int, str],
    answered: list[list[int]],
) -> None:
    hold = threading.Event()
    provider.script(Reply(text="First answer.", hold=hold), Reply(text="Second answer."))
    with harness_with(tmp_path, provider, busy) as harness:
        folder = harness.conversation(f"kit:{busy}")
        # The first answer comes once the second message is kept: during the turn, however slow the machine.
        threading.Thread(target=release_when_kept, args=(folder, 2, hold), daemon=True).start()
        assert asyncio.run(two_messages(harness, provider, f"kit:{busy}")) == (first, second)
        shown = [m["content"] for m in provider.requests[-1].json["messages"][1:]]
        assert shown == ["first message", "First answer.", "second message"]
        wait_until(lambda: len(answers(folder)) == len(answered) and kinds(folder)[-1] == "delivered")
        assert [a["messages"] for a in answers(folder)] == answered


def test_stop_cuts_the_running_answer(tmp_path: Path, provider: StandInProvider) -> None:
    long = "word " * 200
    provider.script(Reply(text=long, chunks=200, delay=0.02), Reply(text="Answering the second."))
    with harness_with(tmp_path, provider, "stop") as harness:
        first, second = asyncio.run(two_messages(harness, provider, "kit:stop"))
        assert first[0] == 200 and len(first[1]) < len(long), "the first answer was cut"
        assert second == (200, "Answering the second.")
        text = provider.requests[-1].text
        assert "first message" in text and "second message" in text
        folder = harness.conversation("kit:stop")
        wait_until(lambda: len(answers(folder)) == 2)
        cut, after = answers(folder)
        assert cut["stopped"] is True and cut["messages"] == [1]
        assert after["messages"] == [2]
        transcript(folder, "Stopped by a new message", "Answering the second.")


def test_the_lease_is_renewed_while_the_turn_runs_and_let_go_after(tmp_path: Path, provider: StandInProvider) -> None:
    hold = threading.Event()
    provider.script(Reply(text="done", hold=hold))
    with harness_with(tmp_path, provider, "steer") as harness:
        before = len(provider.requests)
        client = harness.client()
        result: list[tuple[int, str]] = []
        asker = threading.Thread(target=lambda: result.append(asyncio.run(ask(client, "slow one", "kit:lease"))))
        asker.start()
        provider.wait_for_requests(before + 1)
        lease = harness.conversation("kit:lease") / "turn.json"
        first = json.loads(lease.read_text())
        time.sleep(1.5)  # longer than the lapse: only renewing keeps it
        second = json.loads(lease.read_text())
        assert second["holder"] == first["holder"] and second["renewed"] > first["renewed"] + 1
        hold.set()
        asker.join()
        assert result == [(200, "done")]
        wait_until(lambda: not lease.exists(), what="the lease let go")


def test_two_processes_one_conversation_one_turn(tmp_path: Path, provider: StandInProvider) -> None:
    hold = threading.Event()
    provider.script(Reply(text="Answered by the first process.", hold=hold), Reply(text="Including the second."))
    settings = settings_for(tmp_path, MAIN, provider.url)
    with Harness([settings]) as one, Harness([settings]) as two:
        before = len(provider.requests)

        async def scenario() -> tuple[tuple[int, str], tuple[int, str]]:
            first = asyncio.create_task(ask(one.client(), "to the first process", "kit:shared"))
            await asyncio.to_thread(provider.wait_for_requests, before + 1)
            second = await ask(two.client(), "to the second process", "kit:shared")
            hold.set()
            return await first, second

        first, second = asyncio.run(scenario())
        assert second == (202, ""), "the second process steered into the first's turn"
        assert first == (200, "Answered by the first process.\n\nIncluding the second.")
        assert len(provider.requests) == before + 2


def test_a_lapsed_lease_is_taken_by_one_taker(tmp_path: Path, provider: StandInProvider) -> None:
    """Two processes start over a turn a dead process left: one finishes it, once."""
    settings = settings_for(tmp_path, MAIN, provider.url)
    folder = Path(settings.folders.chats) / "kit:orphan"
    (folder / "events").mkdir(parents=True)
    (folder / "events" / "00000001.json").write_text(json.dumps({"kind": "message", "at": 1.0, "text": "orphaned"}))
    (folder / "turn.json").write_text(json.dumps({"holder": "gone/1/x/y", "taken": 1.0, "renewed": 1.0}))
    provider.script(Reply(text="finished once"))
    before = len(provider.requests)
    with Harness([settings]) as one, Harness([settings]) as two:
        wait_until(lambda: not (folder / "turn.json").exists(), what="the orphaned turn finished")
        time.sleep(0.3)
        assert len(provider.requests) == before + 1, "asked once, by one of the two"
        found = asyncio.run(one.client().recover())
        assert [a.content for a in found] == ["finished once"]
        assert asyncio.run(two.client().recover()) == found


def test_a_holder_that_lost_its_lease_writes_nothing_more(tmp_path: Path, provider: StandInProvider) -> None:
    """A process paused past the lapse loses the turn to the next taker, and stays out of it."""
    hold = threading.Event()
    provider.script(
        Reply(text="from the paused process", hold=hold), Reply(text="finished by the other"), Reply(text="new")
    )
    settings = settings_for(tmp_path, MAIN, provider.url)
    with Harness([settings]) as paused, Harness([settings]) as other:
        before = len(provider.requests)
        loser = threading.Thread(target=lambda: asyncio.run(_quietly(ask(paused.client(), "first", "kit:paused"))))
        loser.start()
        provider.wait_for_requests(before + 1)
        assert paused.process is not None
        paused.process.send_signal(signal.SIGSTOP)
        time.sleep(1.3)
        assert asyncio.run(ask(other.client(), "second", "kit:paused")) == (200, "new")
        paused.process.send_signal(signal.SIGCONT)
        time.sleep(0.6)  # its renewer finds the lease gone and stops the turn
        hold.set()
        loser.join()
        folder = other.conversation("kit:paused")
        time.sleep(0.3)
        assert [a["text"] for a in answers(folder)] == ["finished by the other", "new"]
        assert not any("from the paused process" in json.dumps(e) for e in events(folder))


async def _quietly(coroutine: Awaitable[object]) -> None:
    """The paused process's request ends in an error: what matters is what it didn't write."""
    with suppress(Exception):
        await coroutine


def test_an_answer_whose_request_went_away_is_kept(tmp_path: Path, provider: StandInProvider) -> None:
    hold = threading.Event()
    provider.script(Reply(text="nobody was there", hold=hold))
    with harness_with(tmp_path, provider, "steer") as harness:
        before = len(provider.requests)
        headers = harness.headers(**{wire.THREAD: "kit:gone"})
        body = {"model": "link", "stream": True, "messages": [{"role": "user", "content": "hello?"}]}
        with httpx.stream("POST", f"{harness.origin}/v1/chat/completions", headers=headers, json=body) as response:
            assert response.status_code == 200
            provider.wait_for_requests(before + 1)
        hold.set()  # the connection is closed: the answer finishes with nobody waiting
        wait_until(lambda: asyncio.run(harness.client().recover()), what="the kept answer")
        kept = asyncio.run(harness.client().recover())
        assert [(a.thread, a.content) for a in kept] == [("kit:gone", "nobody was there")]
        assert "delivered" not in kinds(harness.conversation("kit:gone"))
