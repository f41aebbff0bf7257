"""The stand-in provider speaks the real protocols: the official openai and anthropic clients use it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import anthropic
import openai
import pytest

from link_conformance import Reply, StandInProvider, ToolCall


@pytest.fixture
def provider() -> Iterator[StandInProvider]:
    with StandInProvider(key="sk-stand-in") as provider:
        yield provider


def test_openai_streams_scripted_text(provider: StandInProvider) -> None:
    provider.script(Reply(text="Hello from the stand-in.", chunks=4))
    client = openai.OpenAI(base_url=provider.url, api_key="sk-stand-in")
    stream = client.chat.completions.create(
        model="gpt-6-luna", stream=True, messages=[{"role": "user", "content": "hi"}]
    )
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert "".join(pieces) == "Hello from the stand-in."
    assert len(pieces) == 4
    assert provider.requests[0].json["messages"] == [{"role": "user", "content": "hi"}]


def test_openai_tool_calls_streamed_and_not(provider: StandInProvider) -> None:
    call = ToolCall("search", {"query": "sister"})
    provider.script(Reply(tool_calls=[call]), Reply(tool_calls=[call]))
    client = openai.OpenAI(base_url=provider.url, api_key="sk-stand-in")
    whole = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert whole.choices[0].finish_reason == "tool_calls"
    assert whole.choices[0].message.tool_calls[0].function.name == "search"  # type: ignore[union-attr,index]
    stream = client.chat.completions.create(model="m", stream=True, messages=[{"role": "user", "content": "x"}])
    calls = [c.choices[0].delta.tool_calls for c in stream if c.choices and c.choices[0].delta.tool_calls]
    assert calls[0][0].function.arguments == '{"query": "sister"}'  # type: ignore[index,union-attr]


def test_anthropic_streams_text_and_tool_use(provider: StandInProvider) -> None:
    provider.script(Reply(text="Ana.", tool_calls=[ToolCall("remember", {"add": "x"})]))
    client = anthropic.Anthropic(base_url=provider.origin, api_key="sk-stand-in")
    with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=100, messages=[{"role": "user", "content": "who?"}]
    ) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "Ana."  # type: ignore[union-attr]
    assert final.content[1].name == "remember" and final.content[1].input == {"add": "x"}  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"


def test_a_request_without_the_key_is_refused(provider: StandInProvider) -> None:
    client = openai.OpenAI(base_url=provider.url, api_key="sk-wrong")
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert provider.requests == []


def test_hold_keeps_the_answer_back(provider: StandInProvider) -> None:
    hold = threading.Event()
    provider.script(Reply(text="late", hold=hold))
    client = openai.OpenAI(base_url=provider.url, api_key="sk-stand-in")
    got: list[str] = []
    worker = threading.Thread(
        target=lambda: got.append(
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            .choices[0]
            .message.content
            or ""
        )
    )
    worker.start()
    provider.wait_for_requests(1)
    time.sleep(0.2)
    assert got == []
    hold.set()
    worker.join(5)
    assert got == ["late"]


def test_scripts_can_read_the_request(provider: StandInProvider) -> None:
    provider.script(lambda request: Reply(text=f"you sent {len(request.json['messages'])} messages"))
    client = openai.OpenAI(base_url=provider.url, api_key="sk-stand-in")
    answer = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    )
    assert answer.choices[0].message.content == "you sent 2 messages"
