"""A stand-in service that stops and starts again on the same port, as a restarted one does."""

from __future__ import annotations

from typing import Any

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
