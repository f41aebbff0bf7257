"""Stand-in services served from a thread: one that stops and starts again on the same port, as a
restarted service does, and one on a unix socket."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import uvicorn

from link_conformance.serving import Served


class Restartable:
    def __init__(self, port: int = 0) -> None:
        self._port = port
        self._served: Served | None = None

    def app(self) -> Any:
        """The ASGI app to serve; each start serves a new one over the same state."""
        raise NotImplementedError

    @property
    def port(self) -> int:
        return self._port

    def start(self) -> Any:
        self._served = Served(self.app(), port=self._port).start()
        self._port = self._served.port
        return self

    def stop(self) -> None:
        """Stop answering (connections are refused) until `start` again."""
        if self._served is not None:
            self._served.stop()
            self._served = None


class UnixServed:
    """An ASGI app listening on a unix socket at `path` until stopped; the socket file goes with it."""

    def __init__(self, app: Any, path: Path) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self) -> UnixServed:
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
        with suppress(FileNotFoundError):
            self.path.unlink()
