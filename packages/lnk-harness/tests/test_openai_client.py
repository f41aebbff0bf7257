"""The official openai client works against the endpoint unchanged, streamed and not."""

from __future__ import annotations

import threading
from pathlib import Path

import openai
from conftest import MAIN
from helpers import Harness, settings_for
from openai.types.chat import ChatCompletion

from link_conformance.provider import Reply, StandInProvider
from link_plugin import wire


def client(harness: Harness, thread: str, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{harness.origin}/v1",
        api_key=key or harness.main.endpoint_key,
        default_headers={wire.AGENT: MAIN.name, wire.AGENT_ID: MAIN.id, wire.THREAD: thread},
        max_retries=0,
    )


def test_the_openai_client_streams_and_reads_whole_answers(tmp_path: Path, provider: StandInProvider) -> None:
    provider.script(
        Reply(text="Streamed through Link Harness, piece by piece.", chunks=5),
        Reply(text="And whole, too."),
    )
    with Harness([settings_for(tmp_path, MAIN, provider.url)]) as harness:
        ai = client(harness, "openai:stream")
        pieces = []
        stream = ai.chat.completions.create(
            model="link", messages=[{"role": "user", "content": "stream please"}], stream=True
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
        assert "".join(pieces) == "Streamed through Link Harness, piece by piece."
        assert len(pieces) > 1

        whole = ai.chat.completions.create(model="link", messages=[{"role": "user", "content": "and whole?"}])
        assert whole.choices[0].message.content == "And whole, too."
        assert "stream please" in provider.requests[-1].text, "the same conversation, remembered"

        assert [m.id for m in ai.models.list()] == ["link"]

        try:
            client(harness, "openai:stream", key="wrong").chat.completions.create(
                model="link", messages=[{"role": "user", "content": "hi"}]
            )
        except openai.AuthenticationError as exc:
            assert "key" in str(exc)
        else:
            raise AssertionError("a wrong key was answered")


def test_a_steered_message_is_an_empty_completion_to_the_openai_client(
    tmp_path: Path, provider: StandInProvider
) -> None:
    """202 + Link-Steered, and a body the client parses: a completion with no content, whole or
    streamed, named by the running answer's id; the answer comes on the request that started it."""
    hold = threading.Event()
    provider.script(Reply(text="The running answer.", hold=hold), Reply(text="With both folded in."))
    with Harness([settings_for(tmp_path, MAIN, provider.url)]) as harness:
        ai = client(harness, "openai:steer")
        before = len(provider.requests)
        first: list[ChatCompletion] = []
        running = threading.Thread(
            target=lambda: first.append(
                ai.chat.completions.create(model="link", messages=[{"role": "user", "content": "a question"}])
            )
        )
        running.start()
        try:
            provider.wait_for_requests(before + 1)
            whole = ai.chat.completions.with_raw_response.create(
                model="link", messages=[{"role": "user", "content": "and also this"}]
            )
            streamed = ai.chat.completions.with_raw_response.create(
                model="link", messages=[{"role": "user", "content": "and this too"}], stream=True
            )
            chunks = list(streamed.parse())
        finally:
            hold.set()
            running.join()
    for raw in (whole, streamed):
        assert raw.status_code == 202 and raw.headers[wire.STEERED] == "1"
        assert raw.headers[wire.ANSWER_ID] == first[0].id == "openai:steer/1"
    completion = whole.parse()
    assert isinstance(completion, ChatCompletion), f"got {completion!r}"
    assert completion.choices[0].message.content == "" and completion.id == first[0].id
    assert len(chunks) == 1 and chunks[0].choices[0].delta.content == "" and chunks[0].id == first[0].id
    assert chunks[0].choices[0].finish_reason == "stop"
    assert first[0].choices[0].message.content == "The running answer.\n\nWith both folded in."
    assert "and also this" in provider.requests[-1].text and "and this too" in provider.requests[-1].text
