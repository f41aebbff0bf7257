"""How fast a download crosses the sandbox: relay inside, unix socket, proxy outside, a source here.

    python benchmarks/proxy_throughput.py [megabytes] [rounds]

Each round downloads `megabytes` through a CONNECT tunnel three ways, and the medians are printed:

- from inside a real sandbox through Link's relay and the proxy (what a harness gets);
- from inside the same sandbox through `socat -b262144` in the relay's place, to the same proxy
  socket (the anchor: a relay program that is already fast, as sandbox-runtime uses);
- the proxy alone, a client on this machine's loopback;
- and, for scale, the same client straight from the source: what this machine's loopback and
  the two Python ends manage with nothing between.

Targets: at least 900 MB/s from inside, and at least 1.0x socat measured in the same run. The
source and the clients are processes of their own, so only the relay and the proxy share this one.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from common import throwaway_link
from lnk_sandbox.proxy import ConnectionLog, Proxy, ProxySettings, Served
from lnk_sandbox.rules import Rules
from lnk_sandbox.runner import Sandbox

from link_plugin.sandbox import SandboxRequest

TARGET = 900.0
ANCHOR = 3129
"""The port socat listens on inside, beside the relay's 3128."""

SOURCE = """
import os, socket, sys, threading
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
data = os.memfd_create("megabyte")
os.write(data, b"x" * (1 << 20))
def serve(c):
    megabytes = int(c.recv(64))
    for _ in range(megabytes):
        sent = 0
        while sent < 1 << 20:
            sent += os.sendfile(c.fileno(), data, sent, (1 << 20) - sent)
    c.close()
while True:
    threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()
"""

DOWNLOAD = """
import socket, time
def download(port, source, megabytes):
    c = socket.create_connection(("127.0.0.1", port))
    if port != source:
        c.sendall(f"CONNECT 127.0.0.1:{source} HTTP/1.1\\r\\nHost: 127.0.0.1:{source}\\r\\n\\r\\n".encode())
        assert c.recv(4096).startswith(b"HTTP/1.1 200")
    buffer = bytearray(1 << 20)
    started = time.perf_counter()
    c.sendall(b"%d" % megabytes)
    total = 0
    while count := c.recv_into(buffer):
        total += count
    elapsed = time.perf_counter() - started
    c.close()
    assert total == megabytes << 20, total
    return megabytes * (1 << 20) / 1e6 / elapsed
"""

ALONE = (
    DOWNLOAD
    + """
import sys
print(download(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
"""
)

INSIDE = (
    DOWNLOAD
    + """
import json, os, subprocess, sys
source, megabytes, socat_first = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"

def cpu(pid, children):
    # utime and stime (of every thread), and of the children reaped when asked (socat's, one a connection)
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return sum(int(field) for field in fields[11 : 15 if children else 13]) / os.sysconf("SC_CLK_TCK")

socat = subprocess.Popen([sys.argv[4], "-b262144", f"TCP-LISTEN:{ANCHOR},bind=127.0.0.1,reuseaddr,fork",
                          "UNIX-CONNECT:/run/lnk/out/proxy.sock"])
while True:
    try:
        socket.create_connection(("127.0.0.1", ANCHOR)).close()
        break
    except OSError:
        time.sleep(0.01)
time.sleep(0.2)
found = {}
# The relay is this sandbox's first process: pid 1 here.
ways = (("socat", ANCHOR, socat.pid, True), ("relay", 3128, 1, False))
for name, port, pid, children in ways[:: 1 if socat_first else -1]:
    before = cpu(pid, children)
    found[name] = download(port, source, megabytes)
    time.sleep(0.2)  # socat's child for the connection ends and is reaped
    found[name + " cpu"] = (cpu(pid, children) - before) / (megabytes / 1024)
socat.terminate()
print(json.dumps(found))
""".replace("ANCHOR", str(ANCHOR))
)


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    socat = shutil.which("socat")
    if socat is None:
        sys.exit("proxy_throughput needs socat for its anchor: sudo apt-get install socat")
    # Out there a source costs this machine nothing: here it sends by sendfile (no copy), in a
    # session of its own, so the scheduler (autogroup) doesn't count it with the proxy.
    source = subprocess.Popen([sys.executable, "-c", SOURCE], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert source.stdout is not None
    port = int(source.stdout.readline())
    settings = ProxySettings(rules=Rules(localhost=True), port=3128, log=ConnectionLog(None))
    figures: dict[str, list[float]] = {}
    load = os.getloadavg()[0]
    try:
        with throwaway_link('allow = ["localhost"]\n') as layout:
            for round_ in range(rounds):
                direct = [sys.executable, "-c", ALONE, str(port), str(port), str(megabytes)]
                figures.setdefault("direct", []).append(float(subprocess.check_output(direct, start_new_session=True)))
                served = Served()
                served.tcp("127.0.0.1", 0, Proxy(settings).handle)
                with served:
                    alone = [sys.executable, "-c", ALONE, str(served.ports[0]), str(port), str(megabytes)]
                    figures.setdefault("alone", []).append(
                        float(subprocess.check_output(alone, start_new_session=True))
                    )
                argv = ["python3", "-c", INSIDE, str(port), str(megabytes), str(round_ % 2), socat]
                request = SandboxRequest(agent="bench", harness="mini", argv=argv)
                with tempfile.TemporaryFile() as out:
                    assert Sandbox(request, layout, stdout=out).run() == 0
                    out.seek(0)
                    for name, value in json.loads(out.read()).items():
                        figures.setdefault(name, []).append(value)
    finally:
        source.kill()
    median = {name: statistics.median(values) for name, values in figures.items()}
    relay, anchor = median["relay"], median["socat"]
    print(f"medians of {rounds} rounds of {megabytes} MB, alternating; load {load:.2f} to {os.getloadavg()[0]:.2f}")
    print(f"inside, Link's relay + proxy:  {relay:6.0f} MB/s  ({relay / TARGET:.2f}x the 900 MB/s target)")
    print(f"inside, socat relay + proxy:   {anchor:6.0f} MB/s  (anchor)")
    print(f"Link's relay / socat:          {relay / anchor:6.2f}x  (target: 1.0x at least)")
    print(f"proxy alone, loopback:         {median['alone']:6.0f} MB/s")
    print(f"no proxy, loopback:            {median['direct']:6.0f} MB/s  (the source and the client alone)")
    relay_cpu, socat_cpu = median["relay cpu"], median["socat cpu"]
    print(
        f"CPU per GiB, Link's relay:     {relay_cpu:6.2f} s    socat: {socat_cpu:.2f} s  ({relay_cpu / socat_cpu:.2f}x)"
    )
    for name, values in figures.items():
        print(f"  {name:9} rounds: {' '.join(f'{value:.2f}' if 'cpu' in name else f'{value:.0f}' for value in values)}")


if __name__ == "__main__":
    main()
