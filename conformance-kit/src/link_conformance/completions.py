"""One message to an endpoint, and its answer read as an OpenAI client reads it, with Link's headers.

    answered = send(endpoint.url, key, agent, "kit:once", "hello", message_id="kit-1")
    answered.status, answered.answer_id, answered.ids, answered.text, answered.steered

Streamed answers are read event by event (`on_done` runs the moment `data: [DONE]` is read, before
anything else, so a test can act right then); whole ones as one chat.completion.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from link_plugin import sse, wire
from link_plugin.harness import AgentRef


@dataclass
class Answered:
    status: int
    headers: dict[str, str]
    """The response's head, names in lowercase."""
    ids: list[str] = field(default_factory=list)
    """The `id` of every chunk (streamed), or of the completion (whole)."""
    text: str = ""
    complete: bool = False
    """Streamed: `data: [DONE]` came; whole: a chat.completion came."""
    body: bytes = b""

    @property
    def answer_id(self) -> str | None:
        return self.headers.get(wire.ANSWER_ID.lower())

    @property
    def steered(self) -> bool:
        return self.status == 202 and wire.STEERED.lower() in self.headers


def message(
    agent: AgentRef, key: str, thread: str, text: str, *, message_id: str | None = None, stream: bool = True
) -> tuple[dict[str, str], dict[str, Any]]:
    """The headers and body of one message, as a bridge sends it."""
    headers = {"Authorization": f"Bearer {key}", wire.AGENT: agent.name, wire.AGENT_ID: agent.id, wire.THREAD: thread}
    if message_id is not None:
        headers[wire.MESSAGE_ID] = message_id
    return headers, {"model": "link", "stream": stream, "messages": [{"role": "user", "content": text}]}


def read(response: httpx.Response, on_done: Callable[[], None] | None = None) -> Answered:
    """The response to a message, read whole (a streamed one up to `data: [DONE]`)."""
    answered = Answered(response.status_code, {k.lower(): v for k, v in response.headers.items()})
    if not 200 <= response.status_code < 300:
        answered.body = response.read()
        return answered
    if response.headers.get("content-type", "").startswith(sse.CONTENT_TYPE):
        for event in sse.events(response.iter_bytes()):
            if event.done:
                answered.complete = True
                if on_done is not None:
                    on_done()
                return answered
            chunk = event.json()
            if "error" in chunk:
                raise AssertionError(f"the endpoint failed mid-answer: {chunk['error']}")
            answered.ids.append(str(chunk.get("id")))
            for choice in chunk.get("choices") or []:
                answered.text += (choice.get("delta") or {}).get("content") or ""
        return answered
    answered.body = response.read()
    if on_done is not None:
        on_done()
    whole = json.loads(answered.body)
    answered.complete = whole.get("object") == "chat.completion"
    answered.ids.append(str(whole.get("id")))
    answered.text = "".join((c.get("message") or {}).get("content") or "" for c in whole.get("choices") or [])
    return answered


def send(
    url: str,
    key: str,
    agent: AgentRef,
    thread: str,
    text: str,
    *,
    message_id: str | None = None,
    stream: bool = True,
    on_done: Callable[[], None] | None = None,
    timeout: float = 30.0,
) -> Answered:
    """POST one message to the endpoint at `url` (its …/v1 base) and read the answer."""
    headers, body = message(agent, key, thread, text, message_id=message_id, stream=stream)
    with httpx.stream("POST", f"{url}/chat/completions", headers=headers, json=body, timeout=timeout) as response:
        return read(response, on_done)
