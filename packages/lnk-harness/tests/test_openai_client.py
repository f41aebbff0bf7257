"""The official openai client works against the endpoint unchanged, streamed and not."""

from __future__ import annotations

from pathlib import Path

import openai
from conftest import MAIN
from helpers import Harness, settings_for

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
