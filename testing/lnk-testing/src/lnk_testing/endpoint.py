"""A harness endpoint for bridge tests, speaking the wire as a harness does (contract-spec/wire.md).

    harness = ScriptedHarness(key).start()
    harness.script = lambda text: Answer(["you said: ", text])
    ... run a bridge with harness.ref ...
    harness.received[-1].thread == "telegram:42"

It proves itself with the key (or, with `honest=False`, can't), refuses a request without the key
(401) or for another agent (404), streams the scripted answer as chat.completion.chunk events,
and answers a message for a conversation whose answer is still streaming with 202 +
`Link-Steered`, adding it to that answer. Answers kept with `keep` are handed out by
`/_link/recover` until confirmed. `stop` and `start` again come back on the same port, as a
restarted harness does.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from link_plugin import wire
from link_plugin.channel import EndpointRef
from link_plugin.harness import AgentRef
from lnk_testing.serving import Restartable

AGENT = AgentRef(name="main", id="tstagent0001", owner="tester@here")


@dataclass
class Answer:
    pieces: list[str]
    delay: float = 0.0
    """Seconds before each piece."""
    hold: threading.Event | None = None
    """The answer waits for this before its first piece."""
    crash_after: int | None = None
    """Break the connection after this many pieces, as a harness that died mid-answer; the whole
    answer is then kept for recovery, as the harness finishing the turn after its restart would."""


@dataclass
class Received:
    thread: str
    text: str
    headers: dict[str, str]
    steered: bool = False


def echo(text: str) -> Answer:
    return Answer(["you said: ", text])


@dataclass
class _Running:
    steers: list[str] = field(default_factory=list)


class ScriptedHarness(Restartable):
    def __init__(self, key: str, *, agent: AgentRef = AGENT, honest: bool = True, port: int = 0) -> None:
        self.key = key
        self.agent = agent
        self.honest = honest
        self.script: Callable[[str], Answer] = echo
        self.received: list[Received] = []
        self.proofs = 0
        self.requests: list[tuple[str, dict[str, str]]] = []
        """Every request's path and headers, proofs included."""
        self.confirmed: list[str] = []
        self._recover_asks = 0
        self.first_piece_at: list[float] = []
        """When each answer's first piece was written, for latency measures."""
        self._kept: list[wire.Undelivered] = []
        self._running: dict[str, _Running] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        super().__init__(port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def ref(self) -> EndpointRef:
        return EndpointRef(url=self.url, key=self.key)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(wire.PROOF_PATH, self._proof, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route(wire.RECOVER_PATH, self._recover, methods=["GET", "POST"]),
            ]
        )

    def stop(self) -> None:
        super().stop()
        with self._lock:
            self._running.clear()

    def keep(self, thread: str, content: str) -> str:
        """An answer finished with nobody waiting: recovery hands it out until confirmed."""
        answer = wire.Undelivered(id=f"kept-{next(self._ids)}", thread=thread, content=content)
        with self._lock:
            self._kept.append(answer)
        return answer.id

    @property
    def kept(self) -> list[wire.Undelivered]:
        with self._lock:
            return list(self._kept)

    @property
    def recovers(self) -> int:
        """How many times `/_link/recover` was asked (GET)."""
        with self._lock:
            return self._recover_asks

    def _ours(self, request: Request) -> bool:
        return (
            request.headers.get(wire.AGENT) == self.agent.name and request.headers.get(wire.AGENT_ID) == self.agent.id
        )

    def _keyed(self, request: Request) -> bool:
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        return hmac.compare_digest(given.encode(), self.key.encode())

    def _note(self, request: Request) -> None:
        with self._lock:
            self.requests.append((request.url.path, dict(request.headers)))

    def saw_key(self) -> bool:
        """Whether any request carried the endpoint key."""
        with self._lock:
            return any(self.key in json.dumps(headers) for _, headers in self.requests)

    async def _proof(self, request: Request) -> Response:
        self._note(request)
        with self._lock:
            self.proofs += 1
        if not self._ours(request):
            return JSONResponse({"error": "no such agent here"}, status_code=404)
        challenge = wire.ProofRequest.model_validate(await request.json()).challenge
        proof = wire.prove(self.key, challenge) if self.honest else wire.prove("not-the-key", challenge)
        return JSONResponse({"proof": proof})

    async def _chat(self, request: Request) -> Response:
        self._note(request)
        if not self._keyed(request):
            return JSONResponse({"error": "the endpoint key is required"}, status_code=401)
        if not self._ours(request):
            return JSONResponse({"error": "no such agent here"}, status_code=404)
        headers = wire.RequestHeaders.parse(request.headers)
        if headers.thread is None:
            return JSONResponse({"error": f"{wire.THREAD} is required"}, status_code=400)
        thread = str(headers.thread)
        text = (await request.json())["messages"][-1]["content"]
        with self._lock:
            running = self._running.get(thread)
            self.received.append(Received(thread, text, dict(request.headers), steered=running is not None))
            if running is not None:
                running.steers.append(text)
                return Response(status_code=202, headers={wire.STEERED: "1"})
            running = self._running[thread] = _Running()
        return StreamingResponse(self._stream(thread, running, self.script(text)), media_type="text/event-stream")

    async def _stream(self, thread: str, running: _Running, answer: Answer) -> AsyncIterator[bytes]:
        try:
            if answer.hold is not None:
                while not answer.hold.is_set():
                    await asyncio.sleep(0.01)
            for index, piece in enumerate(answer.pieces):
                if answer.crash_after is not None and index >= answer.crash_after:
                    self.keep(thread, "".join(answer.pieces))
                    raise ConnectionAbortedError("the stand-in harness died mid-answer")
                if answer.delay:
                    await asyncio.sleep(answer.delay)
                if index == 0:
                    with self._lock:
                        self.first_piece_at.append(time.monotonic())
                yield _chunk({"content": piece})
            with self._lock:
                steers = list(running.steers)
            for steer in steers:
                yield _chunk({"content": f" (and: {steer})"})
            yield _chunk({}, "stop") + b"data: [DONE]\n\n"
        finally:
            with self._lock:
                if self._running.get(thread) is running:
                    del self._running[thread]

    async def _recover(self, request: Request) -> Response:
        self._note(request)
        if not self._keyed(request):
            return JSONResponse({"error": "the endpoint key is required"}, status_code=401)
        if request.method == "POST":
            sent = set(wire.RecoverConfirm.model_validate(await request.json()).sent)
            with self._lock:
                self.confirmed += sorted(sent)
                self._kept = [a for a in self._kept if a.id not in sent]
            return JSONResponse({})
        with self._lock:
            self._recover_asks += 1
            answers = list(self._kept)
        return JSONResponse(wire.RecoverAnswer(answers=answers).model_dump())


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n".encode()
