"""A message is kept once per key (Link-Message-Id), and every answer is named from its first byte
(Link-Answer-Id) by the id recovery would list it by."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

from conftest import MAIN
from helpers import Harness, crafted, events, kinds, send, settings_for, wait_until

from link_conformance.completions import Answered
from link_conformance.provider import Reply, StandInProvider
from link_plugin import wire
from link_plugin.endpoint import EndpointClient
from lnk_harness.events import MessageIn


def shown(provider: StandInProvider, text: str) -> int:
    """How many times the model's latest request shows `text` as a message."""
    return sum(text in json.dumps(m) for m in provider.requests[-1].json["messages"])


def recovered(client: EndpointClient) -> list[wire.Undelivered]:
    return asyncio.run(client.recover())


def went_out_on_request(folder: Path) -> bool:
    return any(e["kind"] == "delivered" and e["via"] == "request" for e in events(folder))


def test_the_answer_id_is_in_the_head_and_every_chunk(tmp_path: Path, provider: StandInProvider) -> None:
    provider.script(Reply(text="Named from the start.", chunks=4), Reply(text="Whole, named too."))
    with Harness([settings_for(tmp_path, MAIN, provider.url)]) as harness:
        streamed = send(harness, "hello", "kit:ids")
        whole = send(harness, "and whole?", "kit:ids", stream=False)
    assert streamed.text == "Named from the start." and len(streamed.ids) > 2
    assert streamed.answer_id == "kit:ids/1", "named by its message's number, known before the first token"
    assert set(streamed.ids) == {streamed.answer_id}
    assert whole.text == "Whole, named too."
    assert set(whole.ids) == {whole.answer_id} and whole.answer_id == "kit:ids/5"


def test_a_message_sent_again_is_kept_once_and_answered_by_the_same_id(
    tmp_path: Path, provider: StandInProvider
) -> None:
    provider.script(Reply(text="Noted: the dentist on Friday."))
    with Harness([settings_for(tmp_path, MAIN, provider.url)]) as harness:
        first = send(harness, "dentist on Friday", "telegram:7", message_id="update-100")
        folder = harness.conversation("telegram:7")
        wait_until(lambda: kinds(folder)[-1:] == ["delivered"], what="the first answer delivered")
        before = len(provider.requests)
        again = send(harness, "dentist on Friday", "telegram:7", message_id="update-100")
        whole = send(harness, "dentist on Friday", "telegram:7", message_id="update-100", stream=False)
        assert len(provider.requests) == before, "the model is never asked again"
    for answered in (again, whole):
        assert (answered.status, answered.text, answered.answer_id) == (200, first.text, first.answer_id)
        assert set(answered.ids) == {first.answer_id}
    assert kinds(folder) == ["message", "output", "answer", "delivered"], "kept once, answered once"
    assert events(folder)[0]["key"] == "update-100"


def test_a_key_names_one_message(tmp_path: Path, provider: StandInProvider) -> None:
    with Harness([settings_for(tmp_path, MAIN, provider.url)]) as harness:
        send(harness, "the first", "telegram:8", message_id="update-1")
        other = send(harness, "something else", "telegram:8", message_id="update-1")
        bad = send(harness, "hi", "telegram:8", message_id="two words")
        elsewhere = send(harness, "the first", "telegram:9", message_id="update-1")
        folder = harness.conversation("telegram:8")
    assert other.status == 409 and b"update-1" in other.body
    assert bad.status == 400 and wire.MESSAGE_ID.encode() in bad.body
    assert elsewhere.status == 200, "a key is one conversation's: another may use it"
    assert [e["text"] for e in events(folder) if e["kind"] == "message"] == ["the first"]


def test_sent_again_while_its_turn_runs_it_waits_for_that_answer(tmp_path: Path, provider: StandInProvider) -> None:
    hold = threading.Event()
    provider.script(Reply(text="The long answer.", hold=hold))
    with Harness([settings_for(tmp_path, MAIN, provider.url)]) as harness:
        before = len(provider.requests)
        results: dict[str, Answered] = {}
        first = threading.Thread(
            target=lambda: results.update(first=send(harness, "a long one", "telegram:5", message_id="u-5"))
        )
        first.start()
        provider.wait_for_requests(before + 1)
        again = threading.Thread(
            target=lambda: results.update(again=send(harness, "a long one", "telegram:5", message_id="u-5"))
        )
        again.start()
        folder = harness.conversation("telegram:5")
        time.sleep(0.5)  # for the second request to come while the turn runs (after it, it is answered the same)
        hold.set()
        first.join()
        again.join()
        assert len(provider.requests) == before + 1, "one turn"
    assert results["first"].text == results["again"].text == "The long answer."
    assert results["first"].answer_id == results["again"].answer_id == "telegram:5/1"
    assert [k for k in kinds(folder) if k == "message"] == ["message"]


def test_sent_again_after_the_harness_died_before_its_turn(tmp_path: Path, provider: StandInProvider) -> None:
    """Kept, then the harness died before any byte went out: the bridge sends it again."""
    harness, conversation = crafted(tmp_path, provider, "telegram:21")
    conversation.events.append(MessageIn(text="is the shop open on Sunday?", key="update-21"))
    provider.script(Reply(text="It opens at ten on Sundays."))
    with harness:
        answered = send(harness, "is the shop open on Sunday?", "telegram:21", message_id="update-21")
        assert shown(provider, "is the shop open on Sunday?") == 1, "the model saw it once"
        wait_until(lambda: kinds(conversation.folder)[-1] == "delivered", what="the answer delivered")
    assert (answered.status, answered.text, answered.answer_id) == (200, "It opens at ten on Sundays.", "telegram:21/1")
    assert kinds(conversation.folder) == ["message", "output", "answer", "delivered"]


def test_sent_again_after_the_harness_died_mid_turn(tmp_path: Path, provider: StandInProvider) -> None:
    """Kept, its turn taken, then the harness died: restarted, the turn is finished once, and the
    message sent again gets that answer (whoever finishes the turn first, the restart or the request)."""
    harness, conversation = crafted(tmp_path, provider, "telegram:22")
    conversation.events.append(MessageIn(text="book the table", key="update-22"))
    (conversation.folder / "turn.json").write_text(
        '{"holder": "gone/1/a/b", "taken": 1.0, "renewed": 1.0, "answer": 1}'
    )
    provider.script(Reply(text="Booked for eight."))
    before = len(provider.requests)
    with harness:
        answered = send(harness, "book the table", "telegram:22", message_id="update-22")
        wait_until(lambda: not (conversation.folder / "turn.json").exists(), what="the lease let go")
        # The harness records the delivery once its last bytes went out, which the client may read first.
        wait_until(lambda: went_out_on_request(conversation.folder), what="the answer recorded as gone out")
        assert recovered(harness.client()) == [], "it went out on the request: nothing left to recover"
    assert (answered.status, answered.text, answered.answer_id) == (200, "Booked for eight.", "telegram:22/1")
    assert len(provider.requests) == before + 1 and shown(provider, "book the table") == 1
    assert [k for k in kinds(conversation.folder) if k in ("message", "answer")] == ["message", "answer"]
