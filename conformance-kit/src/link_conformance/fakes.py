"""A stand-in harness endpoint for checking bridges: honest (proves itself) or false (can't).

With `answers=True` it answers each message as a harness that keeps a message once per key does:
an echo, streamed, its head naming the answer's id (`Link-Answer-Id`), the same answer under the
same id for a message sent again with its key. `drop_next` closes the next message's connection
before any byte (a harness killed right after it kept it); `kept` is what `/_link/recover` lists,
until confirmed. Without it, a message gets 503.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from link_conformance.serving import Served, drop
from link_plugin import sse, wire


@dataclass(frozen=True)
class Message:
    """A message a bridge carried, as the endpoint got it."""

    thread: str
    text: str
    key: str | None
    answer: str
    """The id of its answer."""


class FakeEndpoint:
    def __init__(self, key: str, honest: bool, *, answers: bool = False) -> None:
        self.key = key
        self.honest = honest
        self.answers = answers
        self.proofs = 0
        self.keyed: list[str] = []
        """Paths of requests that carried the key."""
        self.raw: list[str] = []
        self.messages: list[Message] = []
        """Every message that came with the key, sent again or not."""
        self.drop_next = False
        self.kept: list[wire.Undelivered] = []
        self.confirmed: list[str] = []
        self._lock = threading.Lock()
        self._served = Served(
            Starlette(
                routes=[
                    Route(wire.PROOF_PATH, self._proof, methods=["POST"]),
                    Route(wire.RECOVER_PATH, self._recover, methods=["GET", "POST"]),
                    Route("/v1/chat/completions", self._chat, methods=["POST"]),
                ]
            )
        )

    @property
    def origin(self) -> str:
        return self._served.origin

    def start(self) -> FakeEndpoint:
        self._served.start()
        return self

    def stop(self) -> None:
        self._served.stop()

    def wait(self, condition: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.05)

    def saw(self, text: str) -> bool:
        return any(text in entry for entry in self.raw)

    @staticmethod
    def answer_to(text: str) -> str:
        """What it answers to a message."""
        return f"kit answer to: {text}"

    async def _record(self, request: Request) -> None:
        body = (await request.body()).decode(errors="replace")
        with self._lock:
            self.raw.append(f"{request.method} {request.url.path} {dict(request.headers)} {body}")
            if request.headers.get("authorization") == f"Bearer {self.key}":
                self.keyed.append(request.url.path)

    async def _proof(self, request: Request) -> Response:
        await self._record(request)
        challenge = (await request.json()).get("challenge", "")
        with self._lock:
            self.proofs += 1
        proof = wire.prove(self.key, challenge) if self.honest else "0" * 64
        return JSONResponse({"proof": proof})

    async def _recover(self, request: Request) -> Response:
        await self._record(request)
        if request.method == "POST":
            sent = set((await request.json()).get("sent", []))
            with self._lock:
                self.confirmed += sorted(sent)
                self.kept = [answer for answer in self.kept if answer.id not in sent]
            return JSONResponse({})
        with self._lock:
            return JSONResponse(wire.RecoverAnswer(answers=self.kept).model_dump())

    async def _chat(self, request: Request) -> Response:
        await self._record(request)
        if not self.answers or request.headers.get("authorization") != f"Bearer {self.key}":
            return JSONResponse({"error": "the stand-in endpoint answers no chat"}, status_code=503)
        thread = request.headers.get(wire.THREAD, "")
        key = request.headers.get(wire.MESSAGE_ID)
        text = (await request.json())["messages"][-1]["content"]
        with self._lock:
            before = [m.answer for m in self.messages if key is not None and (m.thread, m.key) == (thread, key)]
            answer = before[0] if before else f"{thread}/{len(self.messages) + 1}"
            self.messages.append(Message(thread, text, key, answer))
            dropping, self.drop_next = self.drop_next, False
        if dropping:
            await drop(request)
            return Response()
        return StreamingResponse(
            self._stream(answer, text), media_type=sse.CONTENT_TYPE, headers={wire.ANSWER_ID: answer}
        )

    async def _stream(self, answer: str, text: str) -> AsyncIterator[bytes]:
        for delta, finish in (({"content": self.answer_to(text)}, None), ({}, "stop")):
            chunk = {
                "id": answer,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            yield sse.event(chunk)
        yield sse.DONE
