"""A session: a small process speaking MCP on stdio, passing every message to its owner's engine.

It tells the engine which agent it serves (as Link named it), starts the engine if none is
listening (or if the one listening gave way: its sandbox didn't show this agent's folder), and
then only carries bytes both ways until either side ends.
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


def _start_engine(path: Path, owner: str) -> subprocess.Popen[bytes]:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    log = path.with_suffix(".log")
    if log.exists() and log.stat().st_size > 1 << 20:
        log.unlink()
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "lnk_link_memory", "engine", "--socket", str(path), "--owner", owner],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )


def connect(path: Path, owner: str) -> socket.socket:
    """A connection to the owner's engine, starting it when none listens."""
    deadline = time.monotonic() + _START_SECONDS
    starting: subprocess.Popen[bytes] | None = None
    while time.monotonic() < deadline:
        client = _connect(path)
        if client is not None:
            return client
        # One that ended without listening found another engine still holding the lock (one
        # starting, or one giving way): start again until one listens.
        if starting is None or starting.poll() is not None:
            starting = _start_engine(path, owner)
        time.sleep(0.05)
    log = path.with_suffix(".log")
    raise SystemExit(f"lnk-link-memory: the memory engine didn't start in {_START_SECONDS:.0f} s; see {log}")


def _greet(client: socket.socket, hello: Hello) -> tuple[Welcome, bytes]:
    """Send the hello, read the welcome; what came after it belongs to the MCP stream."""
    client.sendall(hello.model_dump_json().encode() + b"\n")
    received = b""
    while b"\n" not in received:
        piece = client.recv(65536)
        if not piece:
            raise SystemExit("lnk-link-memory: the memory engine closed the session before answering")
        received += piece
    line, _, rest = received.partition(b"\n")
    return Welcome.model_validate_json(line), rest


def _open(path: Path, hello: Hello) -> tuple[socket.socket, bytes]:
    """A session the engine took: once more if it gave way, since the engine started then sees all."""
    for attempt in range(2):
        client = connect(path, hello.owner)
        welcome, rest = _greet(client, hello)
        if welcome.ok:
            return client, rest
        client.close()
        if not welcome.again or attempt:
            break
    raise SystemExit(f"lnk-link-memory: {welcome.error}")


def _to_engine(client: socket.socket) -> None:
    while True:
        data = os.read(0, 65536)
        if not data:
            break
        client.sendall(data)
    with contextlib.suppress(OSError):
        client.shutdown(socket.SHUT_WR)


def run(path: Path, hello: Hello) -> int:
    if not Path(hello.folder).is_dir():
        raise SystemExit(f"lnk-link-memory: the agent folder {hello.folder} isn't there; Link names an agent's own.")
    client, rest = _open(path, hello)
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
