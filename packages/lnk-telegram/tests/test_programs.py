"""The executables as Link runs them: the bridge as a process reading its spec on stdin, against
the fake Bot API running as a program, as the end-to-end suite does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from conftest import OWNER, spec

from lnk_telegram.api import ENV_API
from lnk_testing.endpoint import ScriptedHarness


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def fake_program() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "lnk_testing.telegram", "--port", str(port)])
    origin = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 15
    while True:
        try:
            httpx.get(f"{origin}/_fake/chats/0", timeout=1)
            break
        except httpx.HTTPError:
            assert time.monotonic() < deadline, "the fake Bot API program didn't start"
            time.sleep(0.05)
    yield origin
    process.terminate()
    process.wait(10)


def test_the_bridge_process_carries_a_message(fake_program: str, harness: ScriptedHarness) -> None:
    bridge = subprocess.Popen(
        ["lnk-telegram", "bridge"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, ENV_API: fake_program},
    )
    assert bridge.stdin is not None and bridge.stderr is not None
    bridge.stdin.write(spec(harness).model_dump_json() + "\n")
    bridge.stdin.close()
    try:
        assert "carrying @lnk_test_bot" in bridge.stderr.readline()
        user = {"id": OWNER.id, "first_name": OWNER.first_name}
        httpx.post(f"{fake_program}/_fake/private", json={"user": user, "text": "over the wire"}).raise_for_status()
        deadline = time.monotonic() + 15
        while True:
            shown = httpx.get(f"{fake_program}/_fake/chats/{OWNER.id}").json()
            if shown and shown[-1]["text"] == "you said: over the wire":
                break
            assert time.monotonic() < deadline, f"not answered: {shown}"
            time.sleep(0.05)
    finally:
        bridge.terminate()
        bridge.wait(10)
    assert [r.text for r in harness.received] == ["over the wire"]
