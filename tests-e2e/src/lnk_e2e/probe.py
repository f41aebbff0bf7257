"""What a program the agent runs would try, run with `python3 -c` inside and outside the sandbox:

    python3 -c "$(cat probe.py)" <Link's settings folder> <a loopback port>

It prints one JSON object: for each attempt, "open: ..." or "refused: ...". Where HTTP_PROXY names
a proxy (in the sandbox, Link's) it tries through it too. It imports nothing but the standard
library, since it runs with the machine's own python3.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Callable


def attempt(found: dict[str, str], name: str, action: Callable[[], object]) -> None:
    try:
        found[name] = f"open: {action()}"
    except Exception as exc:
        found[name] = f"refused: {type(exc).__name__}: {exc}"


def read_everything(folder: str) -> str:
    """Every file under `folder` (the agents' keys among them), read whole: how much was read."""
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"no folder {folder}")
    total = 0
    for parent, _, files in os.walk(folder):
        for path in (os.path.join(parent, name) for name in files):
            if os.path.isfile(path):  # sockets are no files to read
                with open(path, "rb") as handle:
                    total += len(handle.read())
    return f"{total} bytes"


def connect(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        return "connected"


def through_proxy(proxy: str, request: str) -> str:
    """One request to the proxy, as a client configured with HTTP_PROXY sends it; the status line back."""
    host, port = proxy.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request.encode())
        status = sock.recv(4096).split(b"\r\n", 1)[0].decode()
    if " 200 " not in status + " ":
        raise PermissionError(status)
    return status


def main() -> None:
    config, port = sys.argv[1], int(sys.argv[2])
    proxy = os.environ.get("HTTP_PROXY", "").removeprefix("http://").rstrip("/")
    found: dict[str, str] = {}
    attempt(found, "list Link's settings", lambda: sorted(os.listdir(config)))
    attempt(found, "read Link's settings", lambda: read_everything(config))
    attempt(found, "connect to the loopback port", lambda: connect(port))
    if proxy:
        target = f"127.0.0.1:{port}"
        get = f"GET http://{target}/ HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n"
        tunnel = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
        models = "GET http://api.openai.com/v1/models HTTP/1.1\r\nHost: api.openai.com\r\nConnection: close\r\n\r\n"
        attempt(found, "the loopback port through the proxy", lambda: through_proxy(proxy, get))
        attempt(found, "a tunnel to the loopback port", lambda: through_proxy(proxy, tunnel))
        attempt(found, "the model provider through the proxy", lambda: through_proxy(proxy, models))
    print(json.dumps(found))


if __name__ == "__main__":
    main()
