"""A stand-in harness endpoint for checking bridges: honest (proves itself) or false (can't)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from link_conformance.serving import Served
from link_plugin import wire


class FakeEndpoint:
    def __init__(self, key: str, honest: bool) -> None:
        self.key = key
        self.honest = honest
        self.proofs = 0
        self.keyed: list[str] = []
        """Paths of requests that carried the key."""
        self.raw: list[str] = []
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
        return JSONResponse({"answers": []})

    async def _chat(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"error": "the stand-in endpoint answers no chat"}, status_code=503)
