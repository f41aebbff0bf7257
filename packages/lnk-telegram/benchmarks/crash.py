"""From `kill -9` of the harness to its answer on the phone: python benchmarks/crash.py

Runs the real bridge (python-telegram-bot, the shared bridge parts) between the local fake Bot
API and a scripted harness endpoint running as a process of its own (`python -m
lnk_testing.endpoint`), which keeps what it answers on disk. Each round the owner asks, the
answer starts streaming, and the harness is killed (SIGKILL) as soon as its first words are in
the chat, then started again at once; it hands the whole answer to recovery as soon as it
listens (a dead holder's lease taken at once: `--lapse 0`). It prints, over the rounds:

- kill -> answer: from the kill to the whole answer visible in the chat, median and worst, against
  the goal of 5 s;
- its anchor, measured in the same rounds: from the kill to the restarted harness listening, the
  part no bridge can save;
- the bridge's share, what each kill's answer took beyond that anchor, with the quick probes after a
  loss and, in rounds of its own, probing every 2 s only (`PROBE`, its pace after the first seconds).
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from carry import OWNER, start_bridge, wait

from link_conformance.running import free_block
from link_plugin import wire
from link_plugin.bridge.recovery import PROBE, QUICK
from link_plugin.channel import EndpointRef
from lnk_telegram.api import ENV_API
from lnk_testing.telegram import FakeTelegram

GOAL = 5.0
"""Seconds from a kill to the answer on the phone the product aims at."""
ROUNDS = 10
PIECES = 40
DELAY = 0.05


class Harness:
    """The scripted endpoint as a process: killed, and started again on the same port."""

    def __init__(self, folder: Path) -> None:
        self.key = wire.new_endpoint_key()
        self.port = free_block(1)
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def ref(self) -> EndpointRef:
        return EndpointRef(url=f"http://127.0.0.1:{self.port}/v1", key=self.key)

    def start(self) -> None:
        argv = [sys.executable, "-m", "lnk_testing.endpoint", "--port", str(self.port), "--key", self.key]
        argv += ["--state", str(self.folder), "--pieces", str(PIECES), "--delay", str(DELAY), "--lapse", "0"]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False


def rounds(telegram: FakeTelegram, quick: float) -> tuple[list[float], list[float]]:
    """Kill -> answer shown, and kill -> harness listening, for each round."""
    shown: list[float] = []
    listening: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lnk-crash-") as folder:
        harness = Harness(Path(folder) / "harness")
        harness.start()
        wait(harness.listening)
        bridge = start_bridge(harness.ref, folder=str(Path(folder) / "channel"), quick=quick)
        try:
            for number in range(ROUNDS):
                asked = f"question {number} at {quick:g}"
                whole = f"you said: {asked}" + "".join(f" {i}" for i in range(PIECES - 1))
                before = len(telegram.messages(OWNER.id))
                telegram.private(OWNER, asked)
                wait(lambda b=before: len(telegram.messages(OWNER.id)) > b)  # its first words are shown
                killed = time.monotonic()
                harness.kill()
                harness.start()
                wait(harness.listening)
                listening.append(time.monotonic() - killed)
                wait(lambda w=whole: w in telegram.texts(OWNER.id))
                shown.append(time.monotonic() - killed)
        finally:
            bridge.stop()
            if harness.process is not None:
                harness.kill()
    return shown, listening


def main() -> None:
    with FakeTelegram() as telegram:
        os.environ[ENV_API] = telegram.origin
        telegram.meet(OWNER)
        shown, listening = rounds(telegram, QUICK)
        slow, slow_listening = rounds(telegram, PROBE)
    median, worst, anchor = statistics.median(shown), max(shown), statistics.median(listening)
    share = [a - b for a, b in zip(shown, listening, strict=True)]
    slow_share = [a - b for a, b in zip(slow, slow_listening, strict=True)]
    print(f"kill -> answer on the phone: median {median:.2f} s, worst {worst:.2f} s over {ROUNDS} kills")
    print(f"  = {median / GOAL:.2f} of the {GOAL:g} s goal (median), {worst / GOAL:.2f} (worst)")
    print(f"anchor, kill -> restarted harness listening: median {anchor:.2f} s")
    print(
        f"the bridge's share (answer - listening, each kill): median {statistics.median(share):.2f} s,"
        f" worst {max(share):.2f} s, probing every {QUICK:g} s after a loss"
    )
    print(
        f"  probing every {PROBE:g} s only: median {statistics.median(slow_share):.2f} s,"
        f" worst {max(slow_share):.2f} s ({statistics.median(slow_share) / statistics.median(share):.1f}x the median)"
    )


if __name__ == "__main__":
    main()
