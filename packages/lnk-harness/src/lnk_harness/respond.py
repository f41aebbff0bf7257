"""The answer in OpenAI's chat-completions shape, streamed (SSE) or whole, so any OpenAI client reads it.

The response watches its connection while it sends: it says whether the whole answer went out,
and a turn whose request went away keeps its answer for `/_link/recover`. The answer's id goes
in the response's head (`Link-Answer-Id`), before the first token, and is the `id` of every
chunk (or of the whole completion): the id recovery lists the answer by, should it go
undelivered. A message that joined a running turn is answered 202 with `Link-Steered`, and, so
an OpenAI client reads it too, a completion with no content.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from contextlib import suppress
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from link_plugin import sse, wire
from lnk_harness.reply import End, Joined, Reply

SSE = [(b"content-type", f"{sse.CONTENT_TYPE}; charset=utf-8".encode()), (b"cache-control", b"no-cache")]


def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    """An error as OpenAI's clients expect it."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


class Completion:
    """One answer's chat.completion (whole) or chat.completion.chunk events (streamed), by its id."""

    def __init__(self, answer_id: str | None, model: str) -> None:
        self.id = answer_id or f"chatcmpl-{secrets.token_hex(12)}"
        self.model = model
        self.created = int(time.time())
        self.head = [(wire.ANSWER_ID.lower().encode(), answer_id.encode())] if answer_id else []

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return sse.event(body)

    def whole(self, text: str) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
        return json.dumps(body, ensure_ascii=False).encode()


def steered(joined: Joined, *, stream: bool, model: str) -> Response:
    """202 + Link-Steered (and the running answer's id): a completion with no content, whole or streamed."""
    completion = Completion(joined.answer_id, model)
    headers = {wire.STEERED: "1"}
    if joined.answer_id:
        headers[wire.ANSWER_ID] = joined.answer_id
    if stream:
        body = completion.chunk({"role": "assistant", "content": ""}, "stop") + sse.DONE
        return Response(body, status_code=202, headers=headers, media_type=sse.CONTENT_TYPE)
    return Response(completion.whole(""), status_code=202, headers=headers, media_type="application/json")


class AnswerResponse(Response):
    def __init__(self, reply: Reply, *, stream: bool, model: str) -> None:
        super().__init__(status_code=200)
        self.reply = reply
        self.stream = stream
        self.completion = Completion(reply.answer_id, model)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        listener = asyncio.create_task(listen())
        try:
            if self.stream:
                await self._stream(send, gone)
            else:
                await self._send_whole(send, gone)
        finally:
            self.reply.settle(False)  # unless it settled as its last bytes went out
            listener.cancel()
            with suppress(asyncio.CancelledError):
                await listener

    async def _next(self, gone: asyncio.Event) -> str | End | None:
        """The reply's next piece, or None when the request went away first."""
        piece = asyncio.ensure_future(self.reply.next())
        waiting = asyncio.ensure_future(gone.wait())
        await asyncio.wait({piece, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if not piece.done():
            piece.cancel()
            return None
        return piece.result()

    async def _last(self, send: Send, body: bytes, still_there: bool) -> None:
        """The answer's last bytes; settled the moment they went out, before the response ends."""
        await send({"type": "http.response.body", "body": body, "more_body": True})
        self.reply.settle(still_there)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stream(self, send: Send, gone: asyncio.Event) -> None:
        chunk = self.completion.chunk
        await send({"type": "http.response.start", "status": 200, "headers": SSE + self.completion.head})
        # The role goes with the first piece: one write less before the first token.
        pending = chunk({"role": "assistant", "content": ""})
        while True:
            piece = await self._next(gone)
            if piece is None:
                return
            if isinstance(piece, str):
                body = pending + chunk({"content": piece})
                await send({"type": "http.response.body", "body": body, "more_body": True})
                pending = b""
                continue
            if piece.error is not None:
                failed = {"error": {"message": piece.error, "type": "harness_error"}}
                last = sse.event(failed)
            else:
                last = chunk({}, "stop")
            # Whether the request is still there is known before the last bytes, never after.
            await self._last(send, pending + last + sse.DONE, not gone.is_set())
            return

    async def _send_whole(self, send: Send, gone: asyncio.Event) -> None:
        text = ""
        while True:
            piece = await self._next(gone)
            if piece is None:
                return
            if isinstance(piece, str):
                text += piece
                continue
            if piece.error is not None:
                status, body = 502, json.dumps({"error": {"message": piece.error, "type": "harness_error"}}).encode()
            else:
                status, body = 200, self.completion.whole(text)
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            still_there = not gone.is_set()
            await send({"type": "http.response.start", "status": status, "headers": headers + self.completion.head})
            await self._last(send, body, still_there)
            return
