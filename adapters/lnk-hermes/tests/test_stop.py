"""Stopping the harness stops Hermes: a front that stops, or is killed outright, leaves no Hermes
running (holding its port and its sessions) behind it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from link_conformance.provider import StandInProvider
from link_conformance.running import RunningHarness


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
def test_hermes_goes_with_its_front(tmp_path: Path, how: signal.Signals) -> None:
    with StandInProvider() as provider:
        running = RunningHarness("lnk-hermes", tmp_path, model_url=provider.url, tools={}).start()
        try:
            assert running.process is not None
            (hermes,) = _children(running.process.pid)
            os.kill(running.process.pid, how)
            running.process.wait(timeout=10)
            assert _gone(hermes, 10), f"Hermes ({hermes}) outlived its front, {how.name}"
        finally:
            running.stop()
