"""Tries each permission from inside a sandbox and prints what is open, as JSON on stdout.

It runs with the standard library alone (`python -I -S -c <this file> <json>`), as the command
of a sandbox built exactly as the harness's is.
"""

from __future__ import annotations

import json
import os
import socket
import sys

Result = tuple[bool, str]


def _via_proxy(proxy: str, target: str) -> tuple[int, str]:
    """The proxy's answer to CONNECT target: its status and the reason it gave."""
    host, _, port = proxy.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=20) as connection:
        connection.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(4096)
            if not chunk:
                break
            data += chunk
        if data.startswith(b"HTTP/1.1 200"):
            return 200, ""
        connection.settimeout(2)
        try:
            while chunk := connection.recv(4096):
                data += chunk
        except OSError:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
    return status, body.decode(errors="replace").strip()


def _proxied(proxy: str | None, target: str, what: str) -> Result:
    if proxy is None:
        return False, "no proxy: no network"
    try:
        status, reason = _via_proxy(proxy, target)
    except OSError as exc:
        return False, f"the proxy can't be reached ({exc})"
    if status == 200:
        return True, f"{what}: {target} answered through the proxy"
    if status == 403:
        return False, reason
    return True, f"{what}: the proxy allows {target}, which didn't answer ({reason})"


def _lan() -> Result:
    with open("/proc/net/dev") as handle:
        names = [line.split(":")[0].strip() for line in handle.readlines()[2:]]
    others = [name for name in names if name != "lo"]
    if others:
        return True, f"the machine's network as it is ({', '.join(others)})"
    return False, "a network of its own: only its loopback and the proxy"


def _shown(paths: list[str], what: str) -> Result:
    seen = [path for path in paths if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path))]
    if seen:
        return True, f"{what}: {', '.join(seen)}"
    return False, f"no {what} shown" if paths else f"no {what} on this machine"


def _home(home: str, entries: list[str]) -> Result:
    if not entries:
        return False, f"nothing in {home} to read"
    seen = [name for name in entries if os.path.lexists(os.path.join(home, name))]
    if seen:
        return True, f"{home} is readable ({len(seen)} of {len(entries)} entries tried)"
    return False, f"{home} is hidden"


def main(arguments: list[str]) -> None:
    given = json.loads(arguments[0])
    proxy = given["proxy"]
    results: dict[str, Result] = {
        "network": _proxied(proxy, f"{given['host']}:443", "the internet"),
        "localhost": _proxied(proxy, "127.0.0.1:9", "this machine's loopback"),
        "lan": _lan(),
        "read-home": _home(given["home"], given["entries"]),
        "developer-tools": _shown(given["toolchains"], "toolchains"),
        "open": _shown(given["desktop"], "desktop session"),
    }
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
