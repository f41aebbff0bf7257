"""The stand-in model provider: OpenAI chat completions and Anthropic Messages on the loopback.

A test scripts what it answers (text, tool calls, how it streams, when it holds back) and reads
back every request it got. With `key` set it refuses a request that doesn't carry that key, so a
test can prove who added the key (the proxy) and who never held it (the harness). It answers at
each provider's own paths (OpenRouter's under /api/v1), so with `certificate` (HTTPS, a
certificate for the providers' real names from a test's own CA) it stands in for the real thing.

    with StandInProvider() as provider:
        provider.script(Reply(text="hello"), Reply(tool_calls=[ToolCall("search", {"query": "x"})]))
        ... point a harness at provider.url ...
        assert provider.requests[0].json["messages"][-1]["content"] == "hi"
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from link_conformance.serving import Served
from link_plugin import sse

_ids = itertools.count(1)


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: f"call_{next(_ids)}")


@dataclass
class Reply:
    """One scripted answer."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    chunks: int = 4
    """How many pieces the text streams in."""
    delay: float = 0.0
    """Seconds between pieces."""
    hold: threading.Event | None = None
    """When set, the answer waits for the event before its first byte."""
    status: int = 200
    error: str | None = None


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    json: dict[str, Any]

    @property
    def text(self) -> str:
        """Every message's text in the request, joined, to look for what the model was shown."""
        return json.dumps(self.json.get("messages", []), ensure_ascii=False) + json.dumps(
            self.json.get("system", ""), ensure_ascii=False
        )

    @property
    def tool_names(self) -> set[str]:
        names = set()
        for tool in self.json.get("tools") or []:
            names.add(tool["function"]["name"] if "function" in tool else tool["name"])
        return names


Script = Reply | Callable[[Recorded], Reply]


def _pieces(text: str, chunks: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, chunks)))
    return [text[i : i + size] for i in range(0, len(text), size)]


class StandInProvider:
    def __init__(
        self, key: str | None = None, *, certificate: Path | None = None, sock: socket.socket | None = None
    ) -> None:
        self.key = key
        self.requests: list[Recorded] = []
        self._script: list[Script] = []
        self._lock = threading.Lock()
        self._served = Served(
            Starlette(
                routes=[
                    Route("/v1/chat/completions", self._openai, methods=["POST"]),
                    Route("/v1/messages", self._anthropic, methods=["POST"]),
                    Route("/v1/models", self._models, methods=["GET"]),
                    Route("/api/v1/chat/completions", self._openai, methods=["POST"]),
                ]
            ),
            certificate=certificate,
            sock=sock,
        )

    @property
    def url(self) -> str:
        """The base URL an OpenAI-compatible client takes (…/v1)."""
        return f"{self._served.origin}/v1"

    @property
    def origin(self) -> str:
        return self._served.origin

    def start(self) -> StandInProvider:
        self._served.start()
        return self

    def stop(self) -> None:
        self._served.stop()

    def __enter__(self) -> StandInProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, *replies: Script) -> None:
        """Queue answers, used in order; with none left, the provider answers "ok"."""
        with self._lock:
            self._script.extend(replies)

    def forget_script(self) -> None:
        """Drop the answers queued and not used (a check that failed before the model was asked)."""
        with self._lock:
            self._script.clear()

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[Recorded]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"the model got {len(self.requests)} requests, expected {count}")
            time.sleep(0.01)
        return self.requests

    def _authorized(self, request: Request) -> bool:
        if self.key is None:
            return True
        bearer = request.headers.get("authorization", "")
        return bearer == f"Bearer {self.key}" or request.headers.get("x-api-key") == self.key

    async def _take(self, request: Request) -> tuple[Recorded, Reply] | Response:
        if not self._authorized(request):
            return JSONResponse({"error": {"message": "invalid api key", "type": "auth"}}, status_code=401)
        recorded = Recorded(request.url.path, dict(request.headers), await request.json())
        with self._lock:
            self.requests.append(recorded)
            scripted = self._script.pop(0) if self._script else Reply(text="ok")
        reply = scripted(recorded) if callable(scripted) else scripted
        if reply.hold is not None:
            await asyncio.to_thread(reply.hold.wait, 30)
        if reply.status != 200:
            return JSONResponse({"error": {"message": reply.error or "scripted failure"}}, reply.status)
        return recorded, reply

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "stand-in", "object": "model"}]})

    # --- OpenAI chat completions ----------------------------------------------------------

    async def _openai(self, request: Request) -> Response:
        taken = await self._take(request)
        if isinstance(taken, Response):
            return taken
        recorded, reply = taken
        model = recorded.json.get("model", "stand-in")
        if not recorded.json.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if reply.tool_calls:
                message["tool_calls"] = [_openai_call(call) for call in reply.tool_calls]
            return JSONResponse(
                {
                    "id": f"chatcmpl-{next(_ids)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )
        return StreamingResponse(_openai_stream(model, reply), media_type=sse.CONTENT_TYPE)

    # --- Anthropic Messages ---------------------------------------------------------------

    async def _anthropic(self, request: Request) -> Response:
        taken = await self._take(request)
        if isinstance(taken, Response):
            return taken
        recorded, reply = taken
        model = recorded.json.get("model", "stand-in")
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in reply.tool_calls]
        stop = "tool_use" if reply.tool_calls else "end_turn"
        if not recorded.json.get("stream"):
            return JSONResponse(
                {
                    "id": f"msg_{next(_ids)}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
            )
        return StreamingResponse(_anthropic_stream(model, reply, stop), media_type=sse.CONTENT_TYPE)


def _openai_call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}


async def _openai_stream(model: str, reply: Reply) -> AsyncIterator[bytes]:
    ident = f"chatcmpl-{next(_ids)}"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return sse.event(body)

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.text, reply.chunks):
        if reply.delay:
            await asyncio.sleep(reply.delay)
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        yield chunk({"tool_calls": [{"index": index, **_openai_call(call)}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    yield sse.DONE


async def _anthropic_stream(model: str, reply: Reply, stop: str) -> AsyncIterator[bytes]:
    def event(kind: str, data: dict[str, Any]) -> bytes:
        return sse.event({"type": kind, **data}, name=kind)

    yield event(
        "message_start",
        {
            "message": {
                "id": f"msg_{next(_ids)}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 1, "output_tokens": 0},
            }
        },
    )
    index = 0
    if reply.text:
        yield event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
        for piece in _pieces(reply.text, reply.chunks):
            if reply.delay:
                await asyncio.sleep(reply.delay)
            yield event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
        yield event("content_block_stop", {"index": index})
        index += 1
    for call in reply.tool_calls:
        yield event(
            "content_block_start",
            {"index": index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}},
        )
        yield event(
            "content_block_delta",
            {"index": index, "delta": {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}},
        )
        yield event("content_block_stop", {"index": index})
        index += 1
    yield event("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": 1}})
    yield event("message_stop", {})
