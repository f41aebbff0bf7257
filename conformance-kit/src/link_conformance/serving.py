"""Serving an ASGI app on the loopback (or a unix socket) from a thread, for the stand-ins the kit runs."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import uvicorn
from starlette.requests import Request


class Served:
    """An ASGI app listening on 127.0.0.1 until stopped: at a free port, or at `port` (to come back
    where it was after a stop, as a restarted service does); or on the unix socket at `path`,
    which goes when it stops; or on a listening socket a test made (`sock`, say in a network
    namespace of its own). With `certificate` (a PEM file holding the key and the certificate
    chain, e.g. made by trustme) it speaks HTTPS."""

    def __init__(
        self,
        app: Any,
        port: int = 0,
        *,
        path: Path | None = None,
        sock: socket.socket | None = None,
        certificate: Path | None = None,
    ) -> None:
        self.path = path
        self.scheme = "https" if certificate is not None else "http"
        if sock is not None:
            self._sock = sock
            self.port = sock.getsockname()[1]
        elif path is not None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.bind(str(path))
            self.port = 0
        else:
            # Named TCP, so asyncio turns Nagle off on each connection: a stand-in answering in
            # pieces on a kept-alive connection would otherwise wait out the client's delayed ACK.
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._sock.bind(("127.0.0.1", port))
            self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=1,
            ssl_certfile=str(certificate) if certificate is not None else None,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    @property
    def origin(self) -> str:
        host = self._sock.getsockname()[0] if self._sock.family == socket.AF_INET else "127.0.0.1"
        return f"{self.scheme}://{host}:{self.port}"

    def start(self) -> Served:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the stand-in server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._sock.close()
        if self.path is not None:
            with suppress(FileNotFoundError):
                self.path.unlink()


async def drop(request: Request) -> None:
    """Close the request's connection at once, no byte of an answer sent: what a client sees of a
    server killed while it handled the request. The handler then returns anything; nothing goes out."""
    cycle = request.receive.__self__  # type: ignore[attr-defined]  # uvicorn's request-response cycle
    cycle.transport.abort()
    while not cycle.disconnected:
        await asyncio.sleep(0.001)
