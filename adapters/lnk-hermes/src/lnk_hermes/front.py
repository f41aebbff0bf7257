"""`python -m lnk_hermes.front`: what `start` runs, Hermes Agent behind Link's wire.

Hermes's API server speaks OpenAI chat completions, but not Link's wire: it has no proof, runs
one agent without knowing its name, and answers a message sent mid-turn with a second turn of its
own. So the harness is two processes in one sandbox:

- **Hermes** (`hermes gateway run`), its API server on the loopback at `LNK_PORT` + 1, with a key
  made here at each start that nothing else holds;
- **this front**, at `LNK_PORT`, the endpoint Link's bridges and `lnk agent chat` talk to. It
  answers the proof (the HMAC of the challenge under the endpoint key, never the key), refuses a
  request without the key or for an agent it doesn't run before Hermes sees it, and carries each
  conversation (`Link-Thread`) as one Hermes session (`X-Hermes-Session-Id`), whose history
  Hermes keeps in its own state. A message that comes while its conversation's turn runs joins
  it (202 + `Link-Steered`); once Hermes answered, the messages that joined go to Hermes as the
  next message of the session, and its answer streams on the request that started the turn.

Before Hermes starts, the front makes sure it is installed (from the shared store: a link) and
configured (nothing when the settings didn't change), so a start needs nothing else run first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hashlib
import hmac
import logging
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from link_plugin import sse, wire
from link_plugin.bodies import SMALL, CappedBodies
from link_plugin.errors import LinkError
from link_plugin.harness import ENV_PORT, ENV_SETTINGS, HarnessSettings
from lnk_hermes import config, release

READY_SECONDS = 180.0
"""How long a message waits for Hermes to answer on its API server after a start."""
TURN_SECONDS = 600.0
HERMES_GRACE = 3.0
"""Seconds Hermes is given to stop when the front stops, before it is killed."""
PR_SET_PDEATHSIG = 1

log = logging.getLogger("lnk-hermes")


def session_id(agent_id: str, thread: str) -> str:
    """The Hermes session a conversation is: stable, and safe as the file name Hermes makes of it."""
    return "lnk-" + hashlib.sha256(f"{agent_id}\0{thread}".encode()).hexdigest()[:32]


@dataclass
class Conversation:
    running: bool = False
    steered: list[str] = field(default_factory=list)


class Front:
    def __init__(self, settings: HarnessSettings, hermes_url: str, hermes_key: str) -> None:
        self.settings = settings
        self.hermes_url = hermes_url
        self.hermes_key = hermes_key
        self.conversations: dict[str, Conversation] = {}
        self.ready = asyncio.Event()
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(TURN_SECONDS, connect=5.0), trust_env=False)

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
            return StreamingResponse(_streamed(turn), media_type=sse.CONTENT_TYPE)
        try:
            answer = "".join([piece async for piece in turn])
        except HermesFailed as exc:
            return JSONResponse({"error": str(exc)}, status_code=502)
        return JSONResponse(_completion(answer))

    async def _turn(self, conversation: Conversation, session: str, text: str) -> AsyncIterator[str]:
        """Hermes's answer to `text`, then to what joined the turn meanwhile, piece by piece."""
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
            raise HermesFailed(f"Hermes didn't answer on its API server within {READY_SECONDS:.0f} s") from exc
        except httpx.HTTPError as exc:
            raise HermesFailed(f"Hermes's API server broke off: {exc}") from exc
        finally:
            conversation.running = False

    async def _ask(self, session: str, text: str) -> AsyncIterator[str]:
        body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": text}]}
        headers = {"Authorization": f"Bearer {self.hermes_key}", "X-Hermes-Session-Id": session}
        async with self.http.stream("POST", f"{self.hermes_url}/v1/chat/completions", json=body, headers=headers) as r:
            if r.status_code != 200:
                raise HermesFailed(f"Hermes answered {r.status_code}: {(await r.aread())[:300]!r}")
            async for event in sse.aevents(r.aiter_bytes()):
                if event.done:
                    continue
                for choice in event.json().get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        yield piece

    async def wait_for_hermes(self, process: subprocess.Popen[bytes]) -> None:
        """Ready once Hermes's API server answers its health check; the front stops if Hermes does."""
        while process.poll() is None:
            try:
                if (await self.http.get(f"{self.hermes_url}/health", timeout=2)).status_code == 200:
                    self.ready.set()
                    log.info("Hermes answers on %s", self.hermes_url)
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
        while process.poll() is None:
            await asyncio.sleep(0.5)
        log.error("Hermes exited with %s", process.returncode)
        os.kill(os.getpid(), signal.SIGTERM)


class HermesFailed(Exception):
    pass


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


async def _streamed(turn: AsyncIterator[str]) -> AsyncIterator[bytes]:
    try:
        async for piece in turn:
            yield _chunk({"content": piece})
    except HermesFailed as exc:
        log.error("%s", exc)
        yield _chunk({"content": f"(Hermes failed: {exc})"}, "stop") + sse.DONE
        return
    yield _chunk({}, "stop") + sse.DONE


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


def hermes_env(home: Path, settings: HarnessSettings, key: str) -> dict[str, str]:
    """Hermes's environment: the sandbox's (its proxy among it) without Link's own variables, its
    home in the harness's, its API server's key, and the model's key only where the owner turned
    the agent's wired keys off (else the proxy adds it)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("LNK_")}
    env.update(
        HOME=str(home),
        HERMES_HOME=str(config.hermes_home(home)),
        TMPDIR=str(home / "tmp"),
        API_SERVER_KEY=key,
        NO_COLOR="1",
    )
    if settings.model is not None and settings.model.key:
        env["OPENAI_API_KEY"] = settings.model.key
    return env


def run(settings_file: Path, first: int) -> int:
    logging.basicConfig(level=logging.INFO, format="lnk-hermes: %(message)s")
    settings = HarnessSettings.model_validate_json(settings_file.read_text())
    home = Path(settings.folders.harness_home)
    try:
        if not release.installed(home):
            log.info("%s", release.install(home))
        log.info("%s", config.configure(home, settings, first))
    except LinkError as exc:
        print(f"lnk-hermes: {exc}", file=sys.stderr)
        return 1
    (home / "tmp").mkdir(exist_ok=True)
    key = secrets.token_hex(32)
    process = subprocess.Popen(
        [*release.hermes(home), "gateway", "run"],
        env=hermes_env(home, settings, key),
        cwd=settings.folders.home,
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with_front,
    )
    front = Front(settings, f"http://127.0.0.1:{config.api_port(first)}", key)
    app = Starlette(
        routes=[
            Route(wire.PROOF_PATH, front.proof, methods=["POST"]),
            Route("/v1/models", front.models, methods=["GET"]),
            Route("/v1/chat/completions", front.chat, methods=["POST"]),
        ],
        lifespan=lambda app: _watching(front, process),
    )
    server = uvicorn.Server(
        uvicorn.Config(
            CappedBodies(app, lambda path: SMALL),
            host="127.0.0.1",
            port=first,
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
    )
    try:
        server.run()
    finally:
        # Hermes's gateway may outwait a SIGTERM (its own shutdown drains and waits): a short
        # grace, then it is killed, so the front is gone within what Link and the kit wait.
        process.terminate()
        try:
            process.wait(timeout=HERMES_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return 0


def _die_with_front() -> None:
    """In Hermes's process before it runs: killed the moment the front dies, however it dies (a
    front killed outright would otherwise leave Hermes running, holding its port)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@contextlib.asynccontextmanager
async def _watching(front: Front, process: subprocess.Popen[bytes]) -> AsyncIterator[None]:
    """While the front serves, it watches Hermes: ready when it answers, stopped when it exits."""
    task = asyncio.create_task(front.wait_for_hermes(process))
    try:
        yield
    finally:
        task.cancel()
        await front.http.aclose()


if __name__ == "__main__":
    if not os.environ.get(ENV_SETTINGS) or not os.environ.get(ENV_PORT):
        print(f"lnk-hermes: {ENV_SETTINGS} and {ENV_PORT} name the agent and its port.", file=sys.stderr)
        sys.exit(2)
    sys.exit(run(Path(os.environ[ENV_SETTINGS]), int(os.environ[ENV_PORT])))
