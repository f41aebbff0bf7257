"""Serving an ASGI app on the loopback from a thread, for the stand-ins the kit runs."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


class Served:
    """An ASGI app listening on 127.0.0.1 until stopped: at a free port, or at `port` (to come back
    where it was after a stop, as a restarted service does)."""

    def __init__(self, app: Any, port: int = 0) -> None:
        # Named TCP, so asyncio turns Nagle off on each connection: a stand-in answering in
        # pieces on a kept-alive connection would otherwise wait out the client's delayed ACK.
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

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
