"""A run's proxy and port forwards: their sockets bound before the sandbox starts, what answers
them started by their first connection.

Inside the sandbox, Link's relay passes each connection on to a unix socket outside: the
proxy's, or a forwarded port's. Those sockets are bound here before bubblewrap runs, so the
command never finds one missing. What answers them (the proxy: asyncio, h11, TLS, the agent's
keys, this machine's addresses) takes longer to load than the rest of a start, and many a run
never connects (a setup step that only writes a file, a health check, `true`): so it is loaded
only when a first connection is waiting, and that connection waits in its socket's queue until
it is answered. Whatever a run's command does, it meets the same proxy; only when it is loaded
differs.
"""

from __future__ import annotations

import os
import select
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TextIO

from lnk_sandbox.sockets import unix_address

BACKLOG = 128


class Answering(Protocol):
    """What answers the sockets once started (`proxy.Served`)."""

    def stop(self) -> None: ...


Start = Callable[[list[socket.socket]], Answering]
"""Loads what answers, and starts it on the sockets given (in the order of their paths)."""


class Standby:
    """Unix sockets listening at `paths`, answered by what `start` starts once one is connected to."""

    def __init__(self, paths: list[Path], start: Start, *, echo: TextIO | None = None) -> None:
        self.paths = paths
        self._start = start
        self._echo = echo or sys.stderr
        self._sockets: list[socket.socket] = []
        self._answering: Answering | None = None
        self._wake = os.pipe()
        self._thread = threading.Thread(target=self._wait, name="lnk-proxy-standby", daemon=True)

    def __enter__(self) -> Standby:
        try:
            for path in self.paths:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._sockets.append(sock)
                with unix_address(path) as address:
                    sock.bind(address)
                sock.listen(BACKLOG)
        except BaseException:
            self._close()
            raise
        if self._sockets:
            self._thread.start()
        return self

    def _wait(self) -> None:
        waiting = select.poll()
        for fd in (*(sock.fileno() for sock in self._sockets), self._wake[0]):
            waiting.register(fd, select.POLLIN)
        if any(fd == self._wake[0] for fd, _ in waiting.poll()):
            return
        try:
            self._answering = self._start(self._sockets)
        except Exception as exc:  # said, and the connections refused: never a hang
            print(f"lnk-sandbox: the proxy couldn't start ({type(exc).__name__}: {exc})", file=self._echo, flush=True)
            for sock in self._sockets:
                sock.close()

    def __exit__(self, *exc: object) -> None:
        os.write(self._wake[1], b".")
        if self._thread.is_alive():
            self._thread.join()
        if self._answering is not None:
            self._answering.stop()
        self._close()

    def _close(self) -> None:
        for sock in self._sockets:
            sock.close()
        for fd in self._wake:
            os.close(fd)
