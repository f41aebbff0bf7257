"""A small HTTP/1.1 client and server that write each message as two writes, head then body, as
many clients and servers do (the standard library alone: it runs here, and inside a sandbox from
its source, `python3 -c`, ending with a call of `run`)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

PROOF = b'{"challenge":"' + b"c" * 43 + b'"}'
MESSAGE = b'{"messages":[{"role":"user","content":"hi"}],"stream":false}'
ANSWER = b'{"proof":"' + b"0" * 64 + b'"}'


def nodelay(connection: socket.socket) -> socket.socket:
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio's clients and servers say
    return connection


def connected(port: int) -> socket.socket:
    return nodelay(socket.create_connection(("127.0.0.1", port)))


def message(connection: socket.socket, data: bytes) -> tuple[bytes, bytes] | None:
    """The next message's head (its body read past), and what came after it; None at the end."""
    while b"\r\n\r\n" not in data:
        got = connection.recv(65536)
        if not got:
            return None
        data += got
    head, _, data = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(data) < length:
        data += connection.recv(65536)
    return head, data[length:]


def serve(port: int) -> None:
    """Answer every request until one asks to quit; close after one that says Connection: close."""
    server = socket.create_server(("127.0.0.1", port))

    def answer(connection: socket.socket) -> None:
        nodelay(connection)
        data = b""
        with connection:
            while found := message(connection, data):
                head, data = found
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(ANSWER))
                connection.sendall(ANSWER)
                if head.startswith(b"POST /quit"):
                    os._exit(0)
                if b"connection: close" in head.lower():
                    return

    while True:
        threading.Thread(target=answer, args=(server.accept()[0],), daemon=True).start()


def request(connection: socket.socket, target: str, body: bytes) -> None:
    connection.sendall(f"POST {target} HTTP/1.1\r\nHost: agent\r\nContent-Length: {len(body)}\r\n\r\n".encode())
    connection.sendall(body)
    found = message(connection, b"")
    assert found is not None and found[0].startswith(b"HTTP/1.1 200"), found


def out(via: int, port: int, count: int) -> list[float]:
    """Milliseconds of `count` messages to the server at `port`, each on a connection of its own,
    through the proxy at `via` (or straight to the server when `via` is its port)."""
    target = "/v1/chat" if via == port else f"http://127.0.0.1:{port}/v1/chat"
    found = []
    for _ in range(count):
        started = time.perf_counter()
        with connected(via) as connection:
            request(connection, target, MESSAGE)
        found.append((time.perf_counter() - started) * 1000)
    return found


def run(argv: list[str]) -> None:
    """serve PORT, or out VIA PORT COUNT (printing the milliseconds as JSON)."""
    if argv[0] == "serve":
        serve(int(argv[1]))
    else:
        print(json.dumps(out(int(argv[1]), int(argv[2]), int(argv[3]))), flush=True)


def source() -> str:
    """What `python3 -c` runs, followed by the arguments `run` takes."""
    with open(__file__) as handle:
        return handle.read() + "\nimport sys\n\nrun(sys.argv[1:])\n"
