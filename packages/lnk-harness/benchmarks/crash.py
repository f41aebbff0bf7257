"""How long a crash costs: from `kill -9` of the harness mid-answer to that answer handed over
by `GET /_link/recover` on the harness started again at once.

    python benchmarks/crash.py [--runs 5]

The restarted harness finishes the dead turn at once when the dead holder is provably gone (the
lock it kept went with it). The anchor is the same crash with a lease that can't be checked (as
an older harness wrote it, or one on another machine): its turn waits out the lease's lapse
(`[turns] lapse`, 60 s by default), which is what every crash cost before. Both are measured in
this run, against the conformance kit's stand-in provider, with the settings' default turns.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from figures import agent_settings, headers, serve

from link_conformance.provider import Reply, StandInProvider
from link_conformance.running import free_block, wait_for_port
from link_plugin import wire
from link_plugin.layout import AgentFolder

THREAD = "bench:crash"
GIVE_UP = 180.0
UNCHECKABLE = ("machine", "boot", "lock")
"""What a lease says of its holder that lets a taker prove it gone; without it, only the lapse."""


def crash_once(provider: StandInProvider, root: Path, *, checkable: bool) -> float:
    """Seconds from the kill to the answer recovered."""
    settings = agent_settings(root, 0, provider.url)
    port = free_block(2)
    origin = f"http://127.0.0.1:{port}"
    process = serve([settings], port)
    wait_for_port(port, 30, process)
    provider.script(Reply(text="cut short " * 50, chunks=50, delay=0.05), Reply(text="the answer after the crash"))
    body = {"model": "link", "stream": True, "messages": [{"role": "user", "content": "a question"}]}
    with httpx.stream("POST", f"{origin}/v1/chat/completions", headers=headers(0, THREAD), json=body) as response:
        for line in response.iter_lines():
            if '"content": "cut' in line:
                break  # mid-answer
        process.kill()
        killed = time.monotonic()
    process.wait()
    if not checkable:
        lease = AgentFolder(root / "agent0").chats / THREAD / "turn.json"
        held = {k: v for k, v in json.loads(lease.read_text()).items() if k not in UNCHECKABLE}
        lease.write_text(json.dumps(held))
    process = serve([settings], port)
    try:
        with httpx.Client(timeout=10, trust_env=False) as client:
            while time.monotonic() < killed + GIVE_UP:
                if process.poll() is not None:
                    raise RuntimeError(f"the restarted harness exited with {process.returncode}")
                try:
                    listed = client.get(f"{origin}{wire.RECOVER_PATH}", headers=headers(0, THREAD)).json()["answers"]
                except httpx.TransportError:
                    listed = []
                if listed:
                    return time.monotonic() - killed
                time.sleep(0.02)
        raise RuntimeError(f"no answer recovered within {GIVE_UP:.0f} s of the kill")
    finally:
        process.terminate()
        process.wait()


def main(runs: int) -> None:
    print(f"load average at the start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="lnk-harness-crash-") as folder, StandInProvider() as provider:
        root = Path(folder)
        proven = []
        for run in range(runs):
            proven.append(crash_once(provider, root / f"proven{run}", checkable=True))
            print(f"  run {run + 1}: {proven[-1]:.2f} s", flush=True)
        anchor = crash_once(provider, root / "anchor", checkable=False)
    median = statistics.median(proven)
    print("kill -9 mid-answer to the answer recovered on the restarted harness:")
    label = f"the dead holder proven gone (median of {runs})"
    print(f"  {label:<52}{median:8.2f} s  (max {max(proven):.2f} s)")
    print(f"  {'anchor: a lease that can only lapse (60 s)':<52}{anchor:8.2f} s")
    print(f"  {'ratio':<52}{median / anchor:8.3f}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    main(parser.parse_args().runs)
