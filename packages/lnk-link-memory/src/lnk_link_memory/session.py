"""A session: a small process speaking MCP on stdio, passing every message to its owner's engine.

It tells the engine which agent it serves (as Link named it), starts the engine if none is
listening, and then only carries bytes both ways until either side ends.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from lnk_link_memory.sockets import Hello, Welcome, address

_START_SECONDS = 60.0


def _connect(path: Path) -> socket.socket | None:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with address(path) as where:
            client.connect(where)
    except (FileNotFoundError, ConnectionRefusedError):
        client.close()
        return None
    return client


def _start_engine(path: Path, owner: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    log = path.with_suffix(".log")
    if log.exists() and log.stat().st_size > 1 << 20:
        log.unlink()
    with log.open("ab") as output:
        subprocess.Popen(
            [sys.executable, "-m", "lnk_link_memory", "engine", "--socket", str(path), "--owner", owner],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )


def connect(path: Path, owner: str) -> socket.socket:
    """A connection to the owner's engine, starting it when none listens."""
    client = _connect(path)
    if client is not None:
        return client
    _start_engine(path, owner)
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        client = _connect(path)
        if client is not None:
            return client
        time.sleep(0.05)
    raise SystemExit(f"lnk-link-memory: the memory engine didn't start in {_START_SECONDS:.0f} s; see {path}.log")


def _greet(client: socket.socket, hello: Hello) -> bytes:
    """Send the hello, read the welcome; what came after it belongs to the MCP stream."""
    client.sendall(hello.model_dump_json().encode() + b"\n")
    received = b""
    while b"\n" not in received:
        piece = client.recv(65536)
        if not piece:
            raise SystemExit("lnk-link-memory: the memory engine closed the session before answering")
        received += piece
    line, _, rest = received.partition(b"\n")
    welcome = Welcome.model_validate_json(line)
    if not welcome.ok:
        raise SystemExit(f"lnk-link-memory: {welcome.error}")
    return rest


def _to_engine(client: socket.socket) -> None:
    while True:
        data = os.read(0, 65536)
        if not data:
            break
        client.sendall(data)
    with contextlib.suppress(OSError):
        client.shutdown(socket.SHUT_WR)


def run(path: Path, hello: Hello) -> int:
    client = connect(path, hello.owner)
    rest = _greet(client, hello)
    if rest:
        os.write(1, rest)
    threading.Thread(target=_to_engine, args=(client,), daemon=True).start()
    while True:
        data = client.recv(65536)
        if not data:
            return 0
        view = memoryview(data)
        while view:
            written = os.write(1, view)
            view = view[written:]
