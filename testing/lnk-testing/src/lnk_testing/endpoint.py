"""A harness endpoint for bridge tests, speaking the wire as a harness does (contract-spec/wire.md).

    harness = ScriptedHarness(key).start()
    harness.script = lambda text: Answer(["you said: ", text])
    ... run a bridge with harness.ref ...
    harness.received[-1].thread == "telegram:42"

It proves itself with the key (or, with `honest=False`, can't), refuses a request without the key
(401) or for another agent (404), streams the scripted answer as chat.completion.chunk events,
refuses a message from someone else past its hop cap (403, as Link Harness does), and answers a
message for a conversation whose answer is still streaming with 202 +
`Link-Steered`, adding it to that answer. Answers kept with `keep` are handed out by
`/_link/recover` until confirmed. `stop` and `start` again come back on the same port, as a
restarted harness does.

Like Link Harness, it keeps a message once per conversation and `Link-Message-Id`: the same key
again is never kept again, and gets the answer to that message whole, under the same id (with
another text, 409). Every
answer's head says its id (`Link-Answer-Id`), the chunks' `id` too, and `/_link/recover` lists an
undelivered answer by it. With `keys=False` it is an older endpoint: it reads no key and says no
answer id. An `Answer` can break off mid-way, drop the connection before any byte (as a harness
killed right after it kept the message) or go undelivered after its `[DONE]` (killed right after
it wrote it); each then keeps the answer for recovery, as a restarted harness would.

As a program, for benchmarks and crash tests that kill it (`kill -9`) and start it again:
`python -m lnk_testing.endpoint --port 8090 --key K --state DIR`. Everything it keeps is written to
`DIR` as it changes, and on start the answers whose writer died are kept for recovery after
`--lapse` seconds (the dead holder's lease; 0: taken at once). It echoes each message in
`--pieces` pieces, `--delay` seconds apart.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from link_conformance.serving import drop
from link_plugin import sse, wire
from link_plugin.channel import EndpointRef
from link_plugin.files import write_atomic
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
    kept_at_once: bool = True
    """False: the crash keeps nothing, and the test `keep`s the answer later, as a restarted harness
    does once the dead one's lease lapsed and the model answered again."""
    dropped: bool = False
    """Close the connection before any byte, once the message is kept: a harness killed right then.
    The answer is kept for recovery as for `crash_after`, and the message sent again with its key
    gets it whole."""
    undelivered: bool = False
    """The whole answer goes out, `[DONE]` included, but the harness dies before it notes it
    delivered: the answer is kept for recovery too, under the id its head said."""

    @property
    def text(self) -> str:
        return "".join(self.pieces)


@dataclass
class Received:
    thread: str
    text: str
    headers: dict[str, str]
    steered: bool = False
    key: str | None = None
    """Its `Link-Message-Id`."""
    repeat: bool = False
    """Its key came before in this conversation: answered again, never kept again."""


def echo(text: str) -> Answer:
    return Answer(["you said: ", text])


class Written(Enum):
    WRITING = "writing"
    """Being written to a connection (by this process, or by one that died)."""
    BROKEN = "broken"
    """Its writer died before the end."""
    DONE = "done"
    """Written to its end."""


class Said(BaseModel):
    """An answer to one message, as the harness keeps it."""

    id: str
    thread: str
    text: str
    written: Written = Written.WRITING


class Keyed(BaseModel):
    """A message kept under its key."""

    text: str
    answer: str
    """The id of the answer to it (a steer's: its turn's)."""


class State(BaseModel):
    """What the harness keeps: on disk in a program, so a restart after `kill -9` has it."""

    answers: dict[str, Said] = Field(default_factory=dict)
    """By answer id."""
    keys: dict[str, Keyed] = Field(default_factory=dict)
    """By `<thread> <Link-Message-Id>`."""
    kept: list[wire.Undelivered] = Field(default_factory=list)
    """Answers nobody took, until the bridge confirms them (the outbox)."""
    numbered: int = 0


@dataclass
class _Running:
    answer: str
    steers: list[str] = field(default_factory=list)


class ScriptedHarness(Restartable):
    def __init__(
        self,
        key: str,
        *,
        agent: AgentRef = AGENT,
        honest: bool = True,
        keys: bool = True,
        port: int = 0,
        state: Path | None = None,
        lapse: float = 0.0,
        hops: int = 4,
    ) -> None:
        self.key = key
        self.hops = hops
        """The agent's cap on `Link-Hops`: a message from someone else past it is refused (403)."""
        self.agent = agent
        self.honest = honest
        self.keys = keys
        """Reads `Link-Message-Id` and says `Link-Answer-Id`; False: an older endpoint, which doesn't."""
        self.script: Callable[[str], Answer] = echo
        self.received: list[Received] = []
        self.proofs = 0
        self.requests: list[tuple[str, dict[str, str]]] = []
        """Every request's path and headers, proofs included."""
        self.confirmed: list[str] = []
        self._recover_asks = 0
        self.first_piece_at: list[float] = []
        """When each answer's first piece was written, for latency measures."""
        self._file = state / "harness.json" if state is not None else None
        kept = self._file is not None and self._file.exists()
        self._state = State.model_validate_json(self._file.read_bytes()) if self._file and kept else State()
        self._lapse = lapse
        self._running: dict[str, _Running] = {}
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

    def start(self) -> ScriptedHarness:
        """Serve; the answers whose writer died are kept for recovery once the lapse has passed."""
        with self._lock:
            dead = [said.id for said in self._state.answers.values() if said.written is Written.WRITING]
        if dead:
            threading.Timer(self._lapse, self._finish_dead, args=(dead,)).start()
        super().start()
        return self

    def stop(self) -> None:
        super().stop()
        with self._lock:
            self._running.clear()

    def keep(self, thread: str, content: str) -> str:
        """An answer finished with nobody waiting: recovery hands it out until confirmed."""
        with self._lock:
            said = Said(id=self._number(thread), thread=thread, text=content, written=Written.DONE)
            self._state.answers[said.id] = said
            self._keep(said)
        return said.id

    def finish_broken(self, thread: str) -> str:
        """The turn whose answer broke off in `thread` (`kept_at_once=False`) finished by the
        restarted harness: its whole answer kept for recovery under the id its stream said."""
        with self._lock:
            broken = [s for s in self._state.answers.values() if s.thread == thread and s.written is Written.BROKEN]
            assert broken, f"no answer broke off in {thread}"
            said = broken[-1]
            said.written = Written.DONE
            self._keep(said)
        return said.id

    @property
    def kept(self) -> list[wire.Undelivered]:
        with self._lock:
            return list(self._state.kept)

    @property
    def messages(self) -> list[Received]:
        """The messages kept: each once, however often it was sent."""
        with self._lock:
            return [r for r in self.received if not r.repeat]

    def answer_of(self, received: Received) -> str | None:
        """The id of the answer to a message it kept."""
        with self._lock:
            keyed = self._state.keys.get(f"{received.thread} {received.key}")
            return keyed.answer if keyed is not None else None

    @property
    def recovers(self) -> int:
        """How many times `/_link/recover` was asked (GET)."""
        with self._lock:
            return self._recover_asks

    # -- what it keeps (under the lock) --------------------------------------------------------

    def _number(self, thread: str) -> str:
        self._state.numbered += 1
        return f"{thread}/{self._state.numbered}" if self.keys else f"kept-{self._state.numbered}"

    def _keep(self, said: Said) -> None:
        if all(kept.id != said.id for kept in self._state.kept):
            self._state.kept.append(wire.Undelivered(id=said.id, thread=said.thread, content=said.text))
        self._save()

    def _delivered(self, said: Said) -> None:
        said.written = Written.DONE
        self._state.kept = [kept for kept in self._state.kept if kept.id != said.id]
        self._save()

    def _save(self) -> None:
        if self._file is not None:
            write_atomic(self._file, self._state.model_dump_json())

    def _finish_dead(self, dead: list[str]) -> None:
        """A restarted harness took the dead writer's lease and finished its turn, with nobody waiting."""
        with self._lock:
            for answer in dead:
                said = self._state.answers[answer]
                if said.written is Written.WRITING and not any(r.answer == answer for r in self._running.values()):
                    said.written = Written.BROKEN
                    self._keep(said)

    # -- the wire ------------------------------------------------------------------------------

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
        if headers.sender is not None and headers.sender.hops > self.hops:
            return JSONResponse({"error": f"{wire.HOPS} {headers.sender.hops} is past the cap"}, status_code=403)
        thread = str(headers.thread)
        key = request.headers.get(wire.MESSAGE_ID) if self.keys else None
        text = (await request.json())["messages"][-1]["content"]
        with self._lock:
            before = self._state.keys.get(f"{thread} {key}") if key is not None else None
            running = self._running.get(thread)
            steered = running is not None and before is None
            self.received.append(Received(thread, text, dict(request.headers), steered, key, before is not None))
            if before is not None:
                if before.text != text:
                    return JSONResponse({"error": f"{wire.MESSAGE_ID} {key} names another message"}, status_code=409)
                return self._again(self._state.answers[before.answer])
            if running is not None:
                running.steers.append(text)
                self._remember(thread, key, text, running.answer)
                return Response(status_code=202, headers={wire.STEERED: "1", **self._head(running.answer)})
            answer = self.script(text)
            said = Said(id=self._number(thread), thread=thread, text=answer.text)
            self._state.answers[said.id] = said
            self._remember(thread, key, text, said.id)
            running = self._running[thread] = _Running(said.id)
        if answer.dropped:
            self._broke(said, answer)
            await drop(request)
            return Response()
        return StreamingResponse(
            self._stream(said, running, answer), media_type=sse.CONTENT_TYPE, headers=self._head(said.id)
        )

    def _remember(self, thread: str, key: str | None, text: str, answer: str) -> None:
        if key is not None:
            self._state.keys[f"{thread} {key}"] = Keyed(text=text, answer=answer)
        self._save()

    def _head(self, answer: str) -> dict[str, str]:
        return {wire.ANSWER_ID: answer} if self.keys else {}

    def _again(self, said: Said) -> Response:
        """A message sent again: the answer to it, whole, under the same id (once it is written)."""
        return StreamingResponse(self._replay(said), media_type=sse.CONTENT_TYPE, headers=self._head(said.id))

    async def _replay(self, said: Said) -> AsyncIterator[bytes]:
        while any(r.answer == said.id for r in list(self._running.values())):
            await asyncio.sleep(0.01)
        yield _chunk(said.id, {"content": said.text})
        yield _chunk(said.id, {}, "stop") + sse.DONE
        with self._lock:
            self._delivered(said)

    def _broke(self, said: Said, answer: Answer) -> None:
        with self._lock:
            said.written = Written.BROKEN
            if self._running.get(said.thread) is not None and self._running[said.thread].answer == said.id:
                del self._running[said.thread]
            if answer.kept_at_once:
                self._keep(said)
            else:
                self._save()

    async def _stream(self, said: Said, running: _Running, answer: Answer) -> AsyncIterator[bytes]:
        chunk_id = said.id if self.keys else f"chatcmpl-{secrets.token_hex(8)}"
        try:
            if answer.hold is not None:
                while not answer.hold.is_set():
                    await asyncio.sleep(0.01)
            for index, piece in enumerate(answer.pieces):
                if answer.crash_after is not None and index >= answer.crash_after:
                    self._broke(said, answer)
                    raise ConnectionAbortedError("the stand-in harness died mid-answer")
                if answer.delay:
                    await asyncio.sleep(answer.delay)
                if index == 0:
                    with self._lock:
                        self.first_piece_at.append(time.monotonic())
                yield _chunk(chunk_id, {"content": piece})
            with self._lock:
                steers = list(running.steers)
                said.text += "".join(f" (and: {steer})" for steer in steers)
            for steer in steers:
                yield _chunk(chunk_id, {"content": f" (and: {steer})"})
            yield _chunk(chunk_id, {}, "stop") + sse.DONE
            with self._lock:
                if answer.undelivered:
                    said.written = Written.DONE
                    self._keep(said)
                else:
                    self._delivered(said)
        finally:
            with self._lock:
                if self._running.get(said.thread) is running:
                    del self._running[said.thread]

    async def _recover(self, request: Request) -> Response:
        self._note(request)
        if not self._keyed(request):
            return JSONResponse({"error": "the endpoint key is required"}, status_code=401)
        if request.method == "POST":
            sent = set(wire.RecoverConfirm.model_validate(await request.json()).sent)
            with self._lock:
                self.confirmed += sorted(sent)
                self._state.kept = [a for a in self._state.kept if a.id not in sent]
                self._save()
            return JSONResponse({})
        with self._lock:
            self._recover_asks += 1
            answers = list(self._state.kept)
        return JSONResponse(wire.RecoverAnswer(answers=answers).model_dump())


def _chunk(answer: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": answer,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return sse.event(body)


def main() -> None:
    parser = argparse.ArgumentParser(description="A scripted harness endpoint for tests, killed and started again.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--state", type=Path, required=True, help="where it keeps what it keeps")
    parser.add_argument("--lapse", type=float, default=0.0, help="seconds before a dead writer's answer is kept")
    parser.add_argument("--pieces", type=int, default=20, help="pieces of each answer")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds between pieces")
    args = parser.parse_args()
    args.state.mkdir(parents=True, exist_ok=True)
    harness = ScriptedHarness(args.key, port=args.port, state=args.state, lapse=args.lapse)
    harness.script = lambda text: Answer([f"you said: {text}", *(f" {i}" for i in range(args.pieces - 1))], args.delay)
    harness.start()
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main()
