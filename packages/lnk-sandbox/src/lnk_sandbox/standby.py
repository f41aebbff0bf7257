"""A run's proxy and port forwards: their sockets bound before the sandbox starts, what answers
them started by their first connection.

Inside the sandbox, Link's relay passes each connection on to a unix socket outside: the
proxy's, or a forwarded port's. Those sockets are bound here before bubblewrap runs, so the
command never finds one missing. What answers them (the proxy: asyncio, h11, TLS, the agent's
keys, this machine's addresses) takes longer to load than the rest of a start, and many a run
never connects (a setup step that only writes a file, a health check, `true`): so it is loaded
only when a first connection is waiting, and that connection waits in its socket's queue until
it is answered. Whatever a run's command does, it meets the same proxy; only when it is loaded
differs. Until then the sockets are the interpreter's own (`_socket`, waited on by a `_thread`):
the Python of `socket` and `threading` is loaded with the proxy, not at every start.
"""

from __future__ import annotations

import _socket
import _thread
import os
import select
import sys
from collections.abc import Callable
from pathlib import Path

from lnk_sandbox.sockets import unix_address

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    import socket
    from typing import Protocol, TextIO

    class Answering(Protocol):
        """What answers the sockets once started (`proxy.Served`)."""

        def stop(self) -> None: ...

    Start = Callable[[list[socket.socket]], Answering]
    """Loads what answers, and starts it on the sockets given (in the order of their paths)."""

BACKLOG = 128


class Standby:
    """Unix sockets listening at `paths`, answered by what `start` starts once one is connected to."""

    def __init__(self, paths: list[Path], start: Start, *, echo: TextIO | None = None) -> None:
        self.paths = paths
        self._start = start
        self._echo = echo or sys.stderr
        self._sockets: list[_socket.socket] = []
        self._answering: Answering | None = None
        self._wake = os.pipe()
        self._waiting = _thread.allocate_lock()
        """Held while the thread waiting for a first connection runs."""

    def __enter__(self) -> Standby:
        try:
            for path in self.paths:
                sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                self._sockets.append(sock)
                with unix_address(path) as address:
                    sock.bind(address)
                sock.listen(BACKLOG)
        except BaseException:
            self._close()
            raise
        if self._sockets:
            self._waiting.acquire()
            _thread.start_new_thread(self._wait, ())
        return self

    def _wait(self) -> None:
        try:
            waiting = select.poll()
            for fd in (*(sock.fileno() for sock in self._sockets), self._wake[0]):
                waiting.register(fd, select.POLLIN)
            if any(fd == self._wake[0] for fd, _ in waiting.poll()):
                return
            import socket

            # What answers takes the sockets as the `socket` module's (asyncio serves no other).
            served = [socket.socket(fileno=sock.detach()) for sock in self._sockets]
            self._sockets = list(served)
            try:
                self._answering = self._start(served)
            except Exception as exc:  # said, and the connections refused: never a hang
                message = f"lnk-sandbox: the proxy couldn't start ({type(exc).__name__}: {exc})"
                print(message, file=self._echo, flush=True)
                for sock in self._sockets:
                    sock.close()
        finally:
            self._waiting.release()

    def __exit__(self, *exc: object) -> None:
        os.write(self._wake[1], b".")
        if self._sockets:
            self._waiting.acquire()  # the waiting thread has ended
        if self._answering is not None:
            self._answering.stop()
        self._close()

    def _close(self) -> None:
        for sock in self._sockets:
            sock.close()
        for fd in self._wake:
            os.close(fd)
