"""Link's wire in front of a harness that speaks only OpenAI chat completions.

Many harnesses (Hermes Agent's API server, OpenClaw's gateway) answer OpenAI chat completions
but not Link's wire: they have no proof, run one agent without knowing its name, and answer a
message sent mid-turn with a second turn of their own. An adapter for one runs two processes in
its sandbox:

- **the harness** (the upstream), on the loopback at a port of the agent's block, with a key
  made at each start that nothing else holds (`spawn`: killed the moment the front dies);
- **this front**, at `LNK_PORT`, the endpoint Link's bridges and `lnk agent chat` talk to
  (`serve`). It answers the proof (the HMAC of the challenge under the endpoint key, never the
  key), refuses a request without the key, for an agent it doesn't run, or past the agent's hop
  cap before the harness sees it, and carries each conversation (`Link-Thread`) as one session
  of the harness (its session header, `Upstream.session_header`), whose history the harness
  keeps. A message from someone other than the owner (`Link-From`) reaches the harness prefixed
  by who sent it. A message that comes while its conversation's turn runs joins it (202 +
  `Link-Steered`); once the harness answered, the messages that joined go to it as the session's
  next message, and its answer streams on the request that started the turn.

A harness whose HTTP client tunnels every request through the sandbox's proxy, plain http
included (OpenClaw's does), can't reach the model there: the proxy adds the key only to a plain
request it reads. The front relays for it: the harness's model address is `model_relay(port)`,
its key the upstream's (`Upstream.key`, made at each start: nothing else on the machine can use
the relay), and each request under it goes on to the model's address (the proxy's, in a sandbox)
as a plain request without that key, the proxy adding the model's (or the front, where the owner
turned the agent's wired keys off), the answer streamed back as it comes.

    upstream = Upstream(name="Hermes", url="http://127.0.0.1:8643", key=key,
                        model="hermes-agent", session_header="X-Hermes-Session-Id")
    process = spawn(["hermes", "gateway", "run"], env=..., cwd=...)
    sys.exit(serve(settings, port, upstream, process))

It needs `link-plugin[front]` (starlette, uvicorn, httpx).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hashlib
import hmac
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from link_plugin import sse, wire
from link_plugin.bodies import SMALL, CappedBodies
from link_plugin.harness import ENV_PORT, ENV_SETTINGS, HarnessSettings
from link_plugin.providers import PROVIDERS

READY_SECONDS = 180.0
"""How long a message waits for the harness to answer its health check after a start."""
TURN_SECONDS = 600.0
KEEPALIVE_SECONDS = 10.0
"""How often a stream with nothing yet to say says so (an SSE comment)."""
MODEL_PATH = "/_link/model"
"""Where the front relays a harness's requests to its model."""
MODEL_BODY = 32 * 1024 * 1024
"""The largest request a model provider takes."""
GRACE_SECONDS = 3.0
"""Seconds the harness is given to stop when the front stops, before it is killed."""
PR_SET_PDEATHSIG = 1

log = logging.getLogger("link-plugin.front")


@dataclass(frozen=True)
class Upstream:
    """The harness behind the front: where it answers and how a conversation is named to it."""

    name: str
    """Said in what the front logs and answers when the harness fails ("Hermes")."""
    url: str
    """Its base address on the loopback, without `/v1`."""
    key: str
    """The bearer key it was started with."""
    model: str
    """The `model` of each request (the harness's name for its agent)."""
    session_header: str
    """The request header naming the session a conversation is."""
    health: str = "/health"
    """A path answering 200 once the harness takes requests."""


def session_id(agent_id: str, thread: str) -> str:
    """The session a conversation is: stable, and safe as the file name a harness makes of it."""
    return "lnk-" + hashlib.sha256(f"{agent_id}\0{thread}".encode()).hexdigest()[:32]


@dataclass
class Conversation:
    running: bool = False
    steered: list[str] = field(default_factory=list)


class UpstreamFailed(Exception):
    pass


class Front:
    def __init__(self, settings: HarnessSettings, upstream: Upstream) -> None:
        self.settings = settings
        self.upstream = upstream
        self.conversations: dict[str, Conversation] = {}
        self.ready = asyncio.Event()
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(TURN_SECONDS, connect=5.0), trust_env=False)
        # The model is reached as the front itself would reach it: through the sandbox's proxy.
        self.relay = httpx.AsyncClient(timeout=httpx.Timeout(TURN_SECONDS, connect=10.0), trust_env=True)

    def _ours(self, request: Request) -> bool:
        agent = self.settings.agent
        return request.headers.get(wire.AGENT) == agent.name and request.headers.get(wire.AGENT_ID) == agent.id

    async def proof(self, request: Request) -> Response:
        if not self._ours(request):
            return JSONResponse({"error": "no such agent here"}, status_code=404)
        try:
            challenge = wire.ProofRequest.model_validate(await request.json()).challenge
        except ValueError as exc:
            return JSONResponse({"error": f"a proof takes {{'challenge': hex}}: {exc}"}, status_code=400)
        return JSONResponse({"proof": wire.prove(self.settings.endpoint_key or "", challenge)})

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "link", "object": "model"}]})

    async def chat(self, request: Request) -> Response:
        key = self.settings.endpoint_key or ""
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        if not key or not hmac.compare_digest(given.encode(), key.encode()):
            return JSONResponse({"error": "the endpoint key is required"}, status_code=401)
        if not self._ours(request):
            return JSONResponse({"error": "no such agent here"}, status_code=404)
        try:
            headers = wire.RequestHeaders.parse(request.headers)
        except wire.WireError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        if headers.thread is None:
            return JSONResponse({"error": f"{wire.THREAD} is required"}, status_code=400)
        if headers.sender is not None and headers.sender.hops > self.settings.hops:
            return JSONResponse({"error": f"{wire.HOPS} is past this agent's cap"}, status_code=403)
        try:
            body = await request.json()
            text = _text(body["messages"][-1]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            return JSONResponse({"error": "the body is no chat completion with a message"}, status_code=400)
        if headers.sender is not None:
            text = f"(from {headers.sender.who}) {text}"
        thread = str(headers.thread)
        conversation = self.conversations.setdefault(thread, Conversation())
        stream = body.get("stream") is True
        if conversation.running:
            conversation.steered.append(text)
            return _steered(stream)
        conversation.running = True
        turn = self._turn(conversation, session_id(self.settings.agent.id, thread), text)
        if stream:
            return StreamingResponse(self._streamed(turn), media_type=sse.CONTENT_TYPE)
        try:
            answer = "".join([piece async for piece in turn])
        except UpstreamFailed as exc:
            return JSONResponse({"error": str(exc)}, status_code=502)
        return JSONResponse(_completion(answer))

    async def _turn(self, conversation: Conversation, session: str, text: str) -> AsyncIterator[str]:
        """The harness's answer to `text`, then to what joined the turn meanwhile, piece by piece."""
        name = self.upstream.name
        try:
            await asyncio.wait_for(self.ready.wait(), READY_SECONDS)
            while True:
                async for piece in self._ask(session, text):
                    yield piece
                if not conversation.steered:
                    return
                text = "\n\n".join(conversation.steered)
                conversation.steered.clear()
        except TimeoutError as exc:
            raise UpstreamFailed(f"{name} didn't answer its health check within {READY_SECONDS:.0f} s") from exc
        except httpx.HTTPError as exc:
            raise UpstreamFailed(f"{name} broke off: {exc}") from exc
        finally:
            conversation.running = False

    async def _ask(self, session: str, text: str) -> AsyncIterator[str]:
        upstream = self.upstream
        body = {"model": upstream.model, "stream": True, "messages": [{"role": "user", "content": text}]}
        headers = {"Authorization": f"Bearer {upstream.key}", upstream.session_header: session}
        async with self.http.stream("POST", f"{upstream.url}/v1/chat/completions", json=body, headers=headers) as r:
            if r.status_code != 200:
                raise UpstreamFailed(f"{upstream.name} answered {r.status_code}: {(await r.aread())[:300]!r}")
            async for event in sse.aevents(r.aiter_bytes()):
                if event.done:
                    continue
                data = event.json()
                if isinstance(data.get("error"), dict):
                    raise UpstreamFailed(f"{upstream.name} failed: {data['error'].get('message', data['error'])}")
                for choice in data.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        yield piece

    async def _streamed(self, turn: AsyncIterator[str]) -> AsyncIterator[bytes]:
        """The turn's pieces as chunks; while none comes (a harness still starting, or preparing
        its turn), a comment every `KEEPALIVE_SECONDS`, so the client sees the stream alive."""
        pending = asyncio.ensure_future(anext(turn))
        try:
            while True:
                done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_SECONDS)
                if not done:
                    yield sse.KEEPALIVE
                    continue
                try:
                    piece = pending.result()
                except StopAsyncIteration:
                    break
                yield _chunk({"content": piece})
                pending = asyncio.ensure_future(anext(turn))
        except UpstreamFailed as exc:
            log.error("%s", exc)
            yield _chunk({"content": f"({exc})"}, "stop") + sse.DONE
            return
        finally:
            pending.cancel()
        yield _chunk({}, "stop") + sse.DONE

    async def model(self, request: Request) -> Response:
        """A request of the harness to its model, relayed as a plain request to the model's address."""
        model = self.settings.model
        if model is None:
            return JSONResponse({"error": "the agent has no model"}, status_code=404)
        given = request.headers.get("authorization", "").removeprefix("Bearer ") or request.headers.get("x-api-key", "")
        if not hmac.compare_digest(given.encode(), self.upstream.key.encode()):
            return JSONResponse({"error": "the relay's key is required"}, status_code=401)
        target = model.url.rstrip("/") + "/" + request.path_params["rest"]
        kept = {name: value for name, value in request.headers.items() if name in _RELAYED}
        provider = PROVIDERS.get(model.provider)
        if model.key and provider is not None:
            kept.update(provider.key_headers(model.key))
        sent = self.relay.build_request(request.method, target, headers=kept, content=await request.body())
        answer = await self.relay.send(sent, stream=True)
        headers = {name: value for name, value in answer.headers.items() if name in _RELAYED}
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            headers=headers,
            background=BackgroundTask(answer.aclose),
        )

    async def watch(self, process: subprocess.Popen[bytes]) -> None:
        """Ready once the harness answers its health check; the front stops if the harness does."""
        url = f"{self.upstream.url}{self.upstream.health}"
        while process.poll() is None:
            try:
                if (await self.http.get(url, timeout=2)).status_code == 200:
                    self.ready.set()
                    log.info("%s answers on %s", self.upstream.name, self.upstream.url)
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
        while process.poll() is None:
            await asyncio.sleep(0.5)
        log.error("%s exited with %s", self.upstream.name, process.returncode)
        os.kill(os.getpid(), signal.SIGTERM)


_RELAYED = frozenset({"content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta"})
"""What of a relayed request's and answer's headers goes on: never a key, which the proxy adds."""


def model_relay(port: int) -> str:
    """The model address a harness behind the front at `port` is given: `/v1` and the rest follow."""
    return f"http://127.0.0.1:{port}{MODEL_PATH}"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _steered(stream: bool) -> Response:
    """202 + Link-Steered, with a completion of no content so an OpenAI client reads it too."""
    if stream:
        body = _chunk({"role": "assistant", "content": ""}, "stop") + sse.DONE
        return Response(body, status_code=202, headers={wire.STEERED: "1"}, media_type=sse.CONTENT_TYPE)
    return JSONResponse(_completion(""), status_code=202, headers={wire.STEERED: "1"})


def _completion(text: str) -> dict[str, Any]:
    return {
        "object": "chat.completion",
        "model": "link",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse.event(
        {
            "object": "chat.completion.chunk",
            "model": "link",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def harness_env(home: Path, **given: str) -> dict[str, str]:
    """The harness's environment: the sandbox's (its proxy among it) without Link's own
    variables, its HOME and TMPDIR in the harness's home, and `given`."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("LNK_")}
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), TMPDIR=str(home / "tmp"), NO_COLOR="1", **given)
    return env


def spawn(argv: list[str], env: Mapping[str, str], cwd: str) -> subprocess.Popen[bytes]:
    """The harness, started so that it dies with the front however the front dies."""
    return subprocess.Popen(argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, preexec_fn=_die_with_front)


def _die_with_front() -> None:
    """In the harness's process before it runs: killed the moment the front dies (a front killed
    outright would otherwise leave the harness running, holding its port)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@contextlib.asynccontextmanager
async def _watching(front: Front, process: subprocess.Popen[bytes]) -> AsyncIterator[None]:
    task = asyncio.create_task(front.watch(process))
    try:
        yield
    finally:
        task.cancel()
        await front.http.aclose()
        await front.relay.aclose()


def serve(
    settings: HarnessSettings,
    port: int,
    upstream: Upstream,
    process: subprocess.Popen[bytes],
    grace: float = GRACE_SECONDS,
) -> int:
    """The front at `port` until it is stopped or the harness exits; then the harness is stopped."""
    front = Front(settings, upstream)
    app = Starlette(
        routes=[
            Route(wire.PROOF_PATH, front.proof, methods=["POST"]),
            Route("/v1/models", front.models, methods=["GET"]),
            Route("/v1/chat/completions", front.chat, methods=["POST"]),
            Route(MODEL_PATH + "/{rest:path}", front.model, methods=["GET", "POST"]),
        ],
        lifespan=lambda app: _watching(front, process),
    )
    server = uvicorn.Server(
        uvicorn.Config(
            CappedBodies(app, lambda path: MODEL_BODY if path.startswith(MODEL_PATH) else SMALL),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
    )
    try:
        server.run()
    finally:
        # A harness may outwait a SIGTERM (draining its own work): a short grace, then it is
        # killed, so the front is gone within what Link and the kit wait.
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return 0


def given() -> tuple[HarnessSettings, int]:
    """The agent's settings and the endpoint's port, as Link hands them to `start`'s process;
    exits saying what is missing when it is run without them."""
    program = Path(sys.argv[0]).name
    if not os.environ.get(ENV_SETTINGS) or not os.environ.get(ENV_PORT):
        print(f"{program}: {ENV_SETTINGS} and {ENV_PORT} name the agent and its port.", file=sys.stderr)
        sys.exit(2)
    settings = HarnessSettings.model_validate_json(Path(os.environ[ENV_SETTINGS]).read_text())
    return settings, int(os.environ[ENV_PORT])
