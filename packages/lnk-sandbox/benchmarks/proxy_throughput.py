"""How fast bytes go through the proxy on the loopback: a CONNECT tunnel to a sink on this machine.

    python benchmarks/proxy_throughput.py [megabytes]

Target: at least 200 MB/s. Printed: the proxy alone (a client on this machine, the proxy on the
loopback) and the whole path from inside a sandbox (relay inside, unix socket, proxy, sink).
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
import time

from common import throwaway_link
from lnk_sandbox.proxy import ConnectionLog, Proxy, ProxySettings, Served
from lnk_sandbox.rules import Rules
from lnk_sandbox.runner import Sandbox

from link_plugin.sandbox import SandboxRequest

TARGET = 200.0
CHUNK = 1 << 20


def sink() -> int:
    """A server on the loopback that reads everything and says how much it read."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve() -> None:
        while True:
            client, _ = server.accept()
            threading.Thread(target=drain, args=(client,), daemon=True).start()

    def drain(client: socket.socket) -> None:
        buffer = bytearray(CHUNK)
        total = 0
        while count := client.recv_into(buffer):
            total += count
        client.sendall(str(total).encode())
        client.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(server.getsockname()[1])


def push(proxy: tuple[str, int], port: int, megabytes: int) -> float:
    """MB/s through a CONNECT tunnel to 127.0.0.1:port."""
    with socket.create_connection(proxy) as connection:
        connection.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert connection.recv(4096).startswith(b"HTTP/1.1 200")
        data = b"x" * CHUNK
        started = time.perf_counter()
        for _ in range(megabytes):
            connection.sendall(data)
        connection.shutdown(socket.SHUT_WR)
        assert int(connection.recv(64)) == megabytes * CHUNK
        return megabytes * CHUNK / 1e6 / (time.perf_counter() - started)


INSIDE = """
import socket, sys, time
port, megabytes = int(sys.argv[1]), int(sys.argv[2])
c = socket.create_connection(("127.0.0.1", 3128))
c.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n".encode())
assert c.recv(4096).startswith(b"HTTP/1.1 200")
data = b"x" * (1 << 20)
started = time.perf_counter()
for _ in range(megabytes):
    c.sendall(data)
c.shutdown(socket.SHUT_WR)
assert int(c.recv(64)) == megabytes << 20
print(megabytes * (1 << 20) / 1e6 / (time.perf_counter() - started))
"""


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    port = sink()
    settings = ProxySettings(rules=Rules(localhost=True), port=3128, log=ConnectionLog(None))
    served = Served()
    served.tcp("127.0.0.1", 0, Proxy(settings).handle)
    with served:
        alone = push(("127.0.0.1", served.ports[0]), port, megabytes)
    with throwaway_link('allow = ["localhost"]\n') as layout, tempfile.TemporaryFile() as out:
        request = SandboxRequest(
            agent="bench", harness="mini", argv=["python3", "-c", INSIDE, str(port), str(megabytes)]
        )
        Sandbox(request, layout, environ=dict(os.environ), stdout=out).run()
        out.seek(0)
        inside = float(out.read())
    print(f"proxy alone, loopback:       {alone:8.0f} MB/s  ({alone / TARGET:.1f}x the 200 MB/s target)")
    print(f"from inside a sandbox:       {inside:8.0f} MB/s  ({inside / TARGET:.1f}x the 200 MB/s target)")


if __name__ == "__main__":
    main()
