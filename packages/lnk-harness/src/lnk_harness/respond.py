"""The answer in OpenAI's chat-completions shape, streamed (SSE) or whole, so any OpenAI client reads it.

The response watches its connection while it sends: it says whether the whole answer went out,
and a turn whose request went away keeps its answer for `/_link/recover`.
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

from lnk_harness.reply import End, Reply


def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    """An error as OpenAI's clients expect it."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


class AnswerResponse(Response):
    def __init__(self, reply: Reply, *, stream: bool, model: str) -> None:
        super().__init__(status_code=200)
        self.reply = reply
        self.stream = stream
        self.model = model
        self.id = f"chatcmpl-{secrets.token_hex(12)}"
        self.created = int(time.time())

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

    def _whole(self, text: str) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
        return json.dumps(body, ensure_ascii=False).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        listener = asyncio.create_task(listen())
        delivered = False
        try:
            if self.stream:
                delivered = await self._stream(send, gone)
            else:
                delivered = await self._send_whole(send, gone)
        finally:
            listener.cancel()
            with suppress(asyncio.CancelledError):
                await listener
            self.reply.settle(delivered)

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

    async def _stream(self, send: Send, gone: asyncio.Event) -> bool:
        headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        # The role goes with the first piece: one write less before the first token.
        pending = self._chunk({"role": "assistant", "content": ""})
        while True:
            piece = await self._next(gone)
            if piece is None:
                return False
            if isinstance(piece, str):
                await send(
                    {"type": "http.response.body", "body": pending + self._chunk({"content": piece}), "more_body": True}
                )
                pending = b""
                continue
            if piece.error is not None:
                body = {"error": {"message": piece.error, "type": "harness_error"}}
                last = f"data: {json.dumps(body)}\n\n".encode()
            else:
                last = self._chunk({}, "stop")
            # Whether the request is still there is known before the last bytes, never after.
            still_there = not gone.is_set()
            await send({"type": "http.response.body", "body": pending + last + b"data: [DONE]\n\n", "more_body": False})
            return still_there

    async def _send_whole(self, send: Send, gone: asyncio.Event) -> bool:
        text = ""
        while True:
            piece = await self._next(gone)
            if piece is None:
                return False
            if isinstance(piece, str):
                text += piece
                continue
            if piece.error is not None:
                status, body = 502, json.dumps({"error": {"message": piece.error, "type": "harness_error"}}).encode()
            else:
                status, body = 200, self._whole(text)
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            still_there = not gone.is_set()
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return still_there
