"""A run's proxy sockets: bound before the sandbox starts, answered once the first connection
comes, and a connection made meanwhile waits for its answer rather than being lost."""

from __future__ import annotations

import contextlib
import io
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from lnk_sandbox.standby import Standby


class Answering:
    """Answers every connection on the sockets it is given with `hi`, until stopped."""

    def __init__(self, sockets: list[socket.socket]) -> None:
        self.sockets = sockets
        self.stopped = False
        for sock in sockets:
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        while not self.stopped:
            try:
                client, _ = sock.accept()
            except OSError:
                return
            with client:
                client.sendall(b"hi")

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir="/tmp") as name:
        yield Path(name)


def said(path: Path) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(str(path))
        return client.recv(16)


def test_nothing_is_started_until_a_connection_comes_and_then_it_is_answered(folder: Path) -> None:
    started: list[list[socket.socket]] = []
    answering: list[Answering] = []
    go = threading.Event()

    def start(sockets: list[socket.socket]) -> Answering:
        go.wait(10)  # as slow to load as it likes: the connection waits in the socket's queue
        started.append(sockets)  # counted before it answers, so a connection answered at once finds it
        answering.append(Answering(sockets))
        return answering[0]

    paths = [folder / "proxy.sock", folder / "port-11434.sock"]
    with Standby(paths, start):
        assert all(path.exists() for path in paths) and not started
        threading.Timer(0.3, go.set).start()
        assert said(paths[1]) == b"hi"
        assert said(paths[0]) == b"hi"
        assert len(started) == 1
    assert answering[0].stopped


def test_a_run_that_never_connects_never_starts_it(folder: Path) -> None:
    started: list[Answering] = []

    def start(sockets: list[socket.socket]) -> Answering:
        started.append(Answering(sockets))
        return started[-1]

    with Standby([folder / "proxy.sock"], start):
        pass
    assert not started


def test_a_proxy_that_cant_start_says_why_and_refuses_rather_than_hangs(folder: Path) -> None:
    def start(sockets: list[socket.socket]) -> Answering:
        raise OSError("no such thing")

    echo = io.StringIO()
    path = folder / "proxy.sock"
    with Standby([path], start, echo=echo):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            client.connect(str(path))
            with contextlib.suppress(ConnectionResetError):  # refused as it waited, or ended: never left waiting
                assert client.recv(16) == b""
        with pytest.raises(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as again:
            again.connect(str(path))
    assert "the proxy couldn't start (OSError: no such thing)" in echo.getvalue()
