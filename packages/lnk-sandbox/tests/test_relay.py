"""The relay's copying, in this process as it runs inside a sandbox: bytes whole and in order both
ways at once, each end passed on, Nagle off on every TCP socket it holds, no pipe held by an idle
connection, and a reader that stops holds its writer back."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Echo, Sink, free_port, held_tcp, kernel_buffers, pipes_held
from lnk_sandbox.relay import PIPE_SIZE, SPARE_PIPES, Splicer, accept, listen

MEGABYTE = 1 << 20


@pytest.fixture(scope="module")
def splicer() -> Splicer:
    return Splicer().start()


@contextlib.contextmanager
def relayed(splicer: Splicer, port: int) -> Iterator[int]:
    """A port of the loopback the relay takes connections on and passes to `port`, as a published port."""
    listener = socket.create_server(("127.0.0.1", 0))
    accept(os.dup(listener.fileno()), port, splicer)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # the relay's copy of it stops accepting too
        listener.close()


def received(connection: socket.socket) -> bytes:
    data = b""
    while chunk := connection.recv(MEGABYTE):
        data += chunk
    return data


def test_bytes_go_both_ways_at_once_whole_and_in_order(splicer: Splicer, echo: Echo) -> None:
    sent = os.urandom(MEGABYTE) * 48  # more than every buffer on the way holds, both ways at once
    digest = hashlib.sha256()
    with relayed(splicer, echo.port) as port, socket.create_connection(("127.0.0.1", port)) as client:

        def send() -> None:
            client.sendall(sent)
            client.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send)
        sender.start()
        total = 0
        while chunk := client.recv(MEGABYTE):
            digest.update(chunk)
            total += len(chunk)
        sender.join()
    assert total == len(sent) + len(b"after your end")
    assert digest.digest() == hashlib.sha256(sent + b"after your end").digest()


def test_an_end_is_passed_on_and_the_other_way_goes_on(splicer: Splicer, echo: Echo) -> None:
    with relayed(splicer, echo.port) as port, socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(b"question")
        client.shutdown(socket.SHUT_WR)
        assert received(client) == b"question" + b"after your end"


def test_a_closed_target_closes_the_connection(splicer: Splicer) -> None:
    nothing = free_port()
    with relayed(splicer, nothing) as port, socket.create_connection(("127.0.0.1", port)) as client:
        client.settimeout(10)
        assert received(client) == b""


def test_what_was_written_last_is_passed_on_before_the_relay_ends(splicer: Splicer) -> None:
    """Once the command ended, the relay lets what is waiting through before the sandbox ends: a
    server's last answer, written just before it exited, still reaches the client outside."""
    server = socket.create_server(("127.0.0.1", 0))
    with server, relayed(splicer, server.getsockname()[1]) as port:
        outside = socket.create_connection(("127.0.0.1", port))
        inside, _ = server.accept()
        outside.sendall(b"ping")
        assert inside.recv(16) == b"ping"  # joined
        last = os.urandom(32 * 1024)
        inside.sendall(last)
        inside.close()
        splicer.settle(10)
        got = b""
        with outside, contextlib.suppress(BlockingIOError):
            while chunk := outside.recv(MEGABYTE, socket.MSG_DONTWAIT):
                got += chunk
    assert got == last


def test_every_tcp_socket_the_relay_holds_says_nodelay(splicer: Splicer, echo: Echo, tmp_path: Path) -> None:
    """A relay writes as it reads: with Nagle on, a request's body would wait for its head's
    acknowledgement, which a peer waiting for that body delays by 40 ms."""
    with relayed(splicer, echo.port) as port, socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(b"ping")
        assert client.recv(16) == b"ping"  # joined, both ways
        mine = client.getsockname()[1]
        held = {s for s in held_tcp() if (s.local, s.peer) == (port, mine) or s.peer == echo.port}
    assert len(held) == 2, held  # the one it accepted, the one it connected
    assert all(s.nodelay for s in held), held

    # Inside, toward the proxy: the TCP side it accepts from the program, the unix side outside.
    unix = tmp_path / "proxy.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(unix))
    server.listen()
    inside = free_port()
    listen(inside, str(unix), splicer)
    with socket.create_connection(("127.0.0.1", inside)) as client, server:
        client.sendall(b"ping")
        outside, _ = server.accept()
        with outside:
            assert outside.recv(16) == b"ping"
            held = {s for s in held_tcp() if s.local == inside}
    assert len(held) == 1 and all(s.nodelay for s in held), held


def test_an_idle_connection_holds_no_pipe(splicer: Splicer, echo: Echo) -> None:
    """A pipe is lent only while bytes are in it: forty open connections hold no more than a few spares."""
    before = pipes_held()
    with relayed(splicer, echo.port) as port, contextlib.ExitStack() as stack:
        clients = [stack.enter_context(socket.create_connection(("127.0.0.1", port))) for _ in range(40)]
        for client in clients:
            client.sendall(b"x" * 100_000)
        for client in clients:
            got = 0
            while got < 100_000:
                got += len(client.recv(MEGABYTE))
        held = pipes_held() - before
        for client in clients:  # still joined
            client.sendall(b"again")
            assert client.recv(16) == b"again"
    assert held <= 2 * SPARE_PIPES, f"{held} pipe ends held by 40 idle connections"


def test_a_reader_that_stops_holds_the_writer_back(splicer: Splicer) -> None:
    """What goes in is what the sockets on the way may buffer, and one pipe: the relay holds no more."""
    sink = Sink(reading=False)
    with relayed(splicer, sink.port) as port, socket.create_connection(("127.0.0.1", port)) as client:
        client.settimeout(1.0)
        sent = 0
        with contextlib.suppress(TimeoutError):
            while sent < 200 * MEGABYTE:
                sent += client.send(b"x" * MEGABYTE)
    sink.close()
    assert sent < kernel_buffers(4) + PIPE_SIZE, f"{sent / MEGABYTE:.0f} MB went in though nothing was read"
