"""What lnk serves while an agent runs: its gateway, its tools socket and its control socket.

- The gateway (loopback, the block's last port) stands in for the sandbox's proxy when the harness
  runs without a sandbox: `/<secret>/_link/tools/<tool>/mcp` reaches the tool bridge, and
  `/<secret>/model/...` reaches the hosted model with its key added here, so the harness never
  holds it. The secret path is only in the harness's settings file.
- The tools socket (~/.config/lnk/agents/.net/<id>/tools.sock): the sandbox's proxy passes
  `/_link/tools/<tool>/mcp` here for a sandboxed harness.
- The control socket (the run folder): status, and the owner's answers to tool calls.

Every body is read with a cap (link_plugin.bodies), so nothing sent to any of them makes lnk
hold more than that: a tool call 4 MiB, a model request 32 MiB (the largest a provider takes),
anything else 64 KiB. A larger one is refused with 413 as it is read.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import socket
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from link_plugin.bodies import SMALL, CappedBodies
from link_plugin.keys import KeyStore
from link_plugin.providers import PROVIDERS, UPSTREAM_ENV, Provider
from link_plugin.sandbox import TOOLS_PATH
from lnk.agents import Agent
from lnk.approvals import Approvals
from lnk.listening import Sockets
from lnk.runstate import RunSpec

_NOT_FORWARDED = {"host", "content-length", "connection", "authorization", "x-api-key", "transfer-encoding"}
_NOT_RETURNED = {"content-length", "transfer-encoding", "connection"}

TOOL_BODY_MAX = 4 * 1024 * 1024
"""A tool call's request: arguments the model wrote, far below this."""
MODEL_BODY_MAX = 32 * 1024 * 1024
"""A model request (the conversation and the tools), as large as a hosted model takes one."""


class ModelRelay:
    """The hosted model, with its key added on the way: the gateway's half of the proxy's job."""

    def __init__(self, provider: Provider, keys: KeyStore) -> None:
        self.provider = provider
        self.keys = keys
        # As the proxy reads it: LNK_UPSTREAM_<PROVIDER> with a path takes the provider's base path's place.
        override = urlsplit(os.environ.get(UPSTREAM_ENV.format(name=provider.name.upper())) or "")
        if override.scheme and override.netloc:
            self.origin = f"{override.scheme}://{override.netloc}"
            self.base = override.path.rstrip("/") or provider.base_path
        else:
            self.origin, self.base = f"https://{provider.host}", provider.base_path
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=15.0))

    async def forward(self, request: Request, path: str) -> Response:
        """`path` is what follows /model: the provider's base path and the API's own."""
        key = self.keys.get(self.provider.name)
        if not key:
            message = f"this agent has no {self.provider.name} key: lnk agent keys set {self.provider.name}"
            return JSONResponse({"error": {"message": message, "type": "lnk"}}, status_code=401)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
        headers.update(self.provider.key_headers(key))
        if not path.startswith(self.provider.base_path + "/"):
            return JSONResponse({"error": {"message": f"not an address of {self.provider.host}"}}, status_code=404)
        outgoing = self.client.build_request(
            request.method,
            self.origin + self.base + path.removeprefix(self.provider.base_path),
            params=request.query_params,
            headers=headers,
            content=await request.body(),
        )
        try:
            incoming = await self.client.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            return JSONResponse({"error": {"message": f"{self.provider.host} can't be reached: {exc}"}}, 502)
        returned = {k: v for k, v in incoming.headers.items() if k.lower() not in _NOT_RETURNED}
        return StreamingResponse(
            incoming.aiter_raw(),
            status_code=incoming.status_code,
            headers=returned,
            background=BackgroundTask(incoming.aclose),
        )

    async def close(self) -> None:
        await self.client.aclose()


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    await JSONResponse({"error": "not found"}, status_code=404)(scope, receive, send)


def _tool_of(path: str) -> str | None:
    """`/_link/tools/<tool>/mcp` -> the tool's name."""
    if not path.startswith(TOOLS_PATH) or not path.endswith("/mcp"):
        return None
    name = path[len(TOOLS_PATH) : -len("/mcp")]
    return name if name and "/" not in name else None


class ToolServer(Protocol):
    """The agent's tools as the gateway reaches them (lnk.tools_on_demand, or a tool bridge itself)."""

    async def serve(self, tool: str, scope: Scope, receive: Receive, send: Send) -> bool:
        """Serve one MCP request for the tool; False when the agent has no such tool."""
        ...


class Gateway:
    """The ASGI app of the gateway (with `secret`) or of the tools socket (without)."""

    def __init__(self, bridge: ToolServer | None, secret: str | None, relay: ModelRelay | None = None) -> None:
        """`bridge` serves the agent's tools; None for an agent that has none."""
        self.bridge = bridge
        self.secret = secret
        self.relay = relay
        self._capped = CappedBodies(self._route, self._cap)

    def _inner(self, path: str) -> str | None:
        """The path past the secret; None when it doesn't start with the secret."""
        if self.secret is None:
            return path
        given, _, rest = path.lstrip("/").partition("/")
        return "/" + rest if hmac.compare_digest(given.encode(), self.secret.encode()) else None

    def _cap(self, path: str) -> int:
        inner = self._inner(path)
        if inner is not None and _tool_of(inner) is not None:
            return TOOL_BODY_MAX
        if inner is not None and self.relay is not None and inner.startswith("/model/"):
            return MODEL_BODY_MAX
        return SMALL

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._capped(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = self._inner(scope["path"])
        if path is None:
            return await _not_found(scope, receive, send)
        tool = _tool_of(path)
        if tool is not None and self.bridge is not None and await self.bridge.serve(tool, scope, receive, send):
            return
        if self.relay is not None and path.startswith("/model/"):
            response = await self.relay.forward(Request(scope, receive), path.removeprefix("/model"))
            return await response(scope, receive, send)
        await _not_found(scope, receive, send)


def control_app(approvals: Approvals, status: Callable[[], Awaitable[dict[str, Any]]]) -> CappedBodies:
    async def get_status(request: Request) -> Response:
        return JSONResponse(await status())

    async def waiting(request: Request) -> Response:
        return JSONResponse([q.model_dump(mode="json") for q in approvals.waiting()])

    async def answer(request: Request) -> Response:
        allow = (await request.json()).get("allow") is True
        if not approvals.answer(request.path_params["id"], allow):
            return JSONResponse({"error": "no such question is waiting"}, status_code=404)
        return JSONResponse({"answered": True, "allow": allow})

    app = Starlette(
        routes=[
            Route("/status", get_status),
            Route("/approvals", waiting),
            Route("/approvals/{id}", answer, methods=["POST"]),
        ]
    )
    return CappedBodies(app, lambda path: SMALL)


class _Quiet(uvicorn.Server):
    """A server that leaves signals to the supervisor, so several share one process."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class Listener:
    """One ASGI app served on one socket, in the supervisor's event loop."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        self.sock = sock
        # HTTP only (ws="none"): uvicorn would load its websocket protocols for nothing.
        config = uvicorn.Config(app, lifespan="off", ws="none", log_level="warning", timeout_graceful_shutdown=2)
        self.server = _Quiet(config)

    async def serve(self) -> None:
        await self.server.serve(sockets=[self.sock])

    def stop(self) -> None:
        self.server.should_exit = True


def listeners(
    agent: Agent,
    spec: RunSpec,
    approvals: Approvals,
    status: Callable[[], Awaitable[dict[str, Any]]],
    bridge: ToolServer | None,
    sockets: Sockets,
) -> list[Listener]:
    """What a running harness's supervisor serves on its sockets (lnk.listening): the control
    socket, and the tools socket for a sandboxed harness or else the gateway (with the model relay
    when lnk adds the model's key)."""
    found = [Listener(control_app(approvals, status), sockets.control)]
    if spec.sandboxed:
        found.append(Listener(Gateway(bridge, None), sockets.tools))
    else:
        relay = ModelRelay(PROVIDERS[spec.provider], agent.keys) if spec.provider else None
        found.append(Listener(Gateway(bridge, spec.secret, relay), sockets.tools))
    return found
