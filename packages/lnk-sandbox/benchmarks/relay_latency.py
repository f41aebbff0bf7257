"""How long small requests take across the sandbox, both ways: no 40 ms stalls.

    python benchmarks/relay_latency.py [requests]

In: the bridge reaches a harness by its published port (this machine's loopback, the relay inside
the sandbox, the harness's port inside). A client here sends a proof and then a message on one
kept-open connection to an HTTP/1.1 server inside; a request alone on a fresh connection is timed
too. Out: a client inside sends messages through the relay and the proxy to a server here, each
on a connection of its own, as the proxy answers one request per connection.

Every request and every answer goes as two writes, head then body (`http_peers.py`). A hop that
writes each read as it comes, with Nagle on, holds the second write until the first is
acknowledged, which a peer waiting for the rest delays by 40 ms: proof + message would take 40 or
80 ms more than its anchor. Each figure has its anchor in the same run: the same client and
server with no sandbox between (alternating, for the way in).

Target: within a few ms of the anchor at p50 and p95, and no request at 40 ms or more.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import http_peers
from common import throwaway_link
from http_peers import MESSAGE, PROOF, connected, request
from lnk_sandbox.runner import Sandbox

from link_plugin.sandbox import SandboxRequest

STALL_MS = 40.0
PROXY = 3128


def pair_ms(port: int) -> float:
    """Proof, then message, on one connection, as the bridge sends a message."""
    started = time.perf_counter()
    with connected(port) as connection:
        request(connection, "/_link/proof", PROOF)
        request(connection, "/v1/chat", MESSAGE)
    return (time.perf_counter() - started) * 1000


def alone_ms(port: int) -> float:
    started = time.perf_counter()
    with connected(port) as connection:
        request(connection, "/_link/proof", PROOF)
    return (time.perf_counter() - started) * 1000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answering(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            alone_ms(port)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def python(*arguments: object) -> list[str]:
    """`http_peers` run by its source, as inside a sandbox."""
    return ["python3", "-c", http_peers.source(), *(str(argument) for argument in arguments)]


def percentiles(samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=20)
    stalled = sum(1 for sample in samples if sample >= STALL_MS)
    median = statistics.median(samples)
    return f"p50 {median:6.2f} ms  p95 {cuts[18]:6.2f} ms  max {max(samples):6.1f} ms  ≥40 ms: {stalled:3}"


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    load = os.getloadavg()[0]
    inside, outside = free_port(), free_port()
    server = subprocess.Popen(python("serve", outside))
    figures: dict[str, list[float]] = {}
    try:
        with throwaway_link('allow = ["localhost"]\n') as layout:
            harness = SandboxRequest(agent="bench", harness="mini", argv=python("serve", inside), ports=[inside])
            sandbox = threading.Thread(target=Sandbox(harness, layout).run, daemon=True)
            sandbox.start()
            answering(inside)
            answering(outside)
            for number in range(count):
                for name, port in (("relay", inside), ("direct", outside))[:: 1 if number % 2 else -1]:
                    figures.setdefault(f"in {name} pair", []).append(pair_ms(port))
                    figures.setdefault(f"in {name} alone", []).append(alone_ms(port))
            with connected(inside) as connection:
                request(connection, "/quit", b"{}")
            sandbox.join(timeout=30)

            client = SandboxRequest(agent="bench", harness="mini", argv=python("out", PROXY, outside, count))
            with tempfile.TemporaryFile() as out:
                assert Sandbox(client, layout, stdout=out).run() == 0
                out.seek(0)
                figures["out relay"] = json.loads(out.read())
            figures["out direct"] = json.loads(subprocess.check_output(python("out", outside, outside, count)))
    finally:
        server.kill()
    print(f"{count} of each; load {load:.2f} to {os.getloadavg()[0]:.2f}")
    print(f"in:  proof + message, one connection, through the relay:  {percentiles(figures['in relay pair'])}")
    print(f"     proof + message, one connection, direct (anchor):    {percentiles(figures['in direct pair'])}")
    print(f"     a request alone, through the relay:                  {percentiles(figures['in relay alone'])}")
    print(f"     a request alone, direct (anchor):                    {percentiles(figures['in direct alone'])}")
    print(f"out: a message through the relay and the proxy:           {percentiles(figures['out relay'])}")
    print(f"     a message, direct (anchor):                          {percentiles(figures['out direct'])}")
    relay, anchor = (statistics.median(figures[f"in {name} pair"]) for name in ("relay", "direct"))
    print(f"proof + message through the relay over its anchor: +{relay - anchor:.2f} ms at p50 (target: no 40 ms step)")


if __name__ == "__main__":
    main()
