"""What every channel's tests share, whatever its service: a harness endpoint, the agent's control
socket, the channel's folder and bridges run in the background as fixtures, a bridge's spec as
Link starts it, `connect` run as in the owner's terminal, and the pairing code's clock.

    pytest_plugins = ["lnk_testing.channels"]  # the fixtures

    running = background(TelegramBridge(bridge_spec(harness, section, secrets, folder=folder)).run)

    pairing = Connecting(monkeypatch, connecting, lambda: connecting.connect(TOKEN, taken=frozenset()))
    fake.dm(OWNER, pairing.code())
    pairing.done()
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from link_plugin import wire
from link_plugin.bridge.carry import Pace
from link_plugin.channel import BridgeSpec, Connected
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.errors import LinkError
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, ScriptedHarness

CODE = re.compile(r"\b([A-Z2-9]{4}-[A-Z2-9]{4})\b")
"""A pairing code as a terminal shows it."""
FAST = Pace(interval=0.1, typing=0.5, hold=10.0, give_up=30.0)
"""The pace bridges run at in tests, unless one says otherwise."""
Work = Callable[[], Coroutine[Any, Any, Any]]


@pytest.fixture
def harness() -> Iterator[ScriptedHarness]:
    """A harness endpoint answering as scripted (`harness.script`), stopped after the test."""
    served = ScriptedHarness(wire.new_endpoint_key()).start()
    yield served
    served.stop()


@pytest.fixture
def control() -> Iterator[ControlSocket]:
    """The agent's control socket, where tool calls wait for the owner."""
    with ControlSocket.temporary() as served:
        yield served


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The channel's folder, where the bridge notes the answers it showed."""
    return tmp_path / "channel"


@pytest.fixture
def background() -> Iterator[Callable[[Work], Background]]:
    """Run a bridge (its `run`) in the background; each one started is stopped after the test."""
    started: list[Background] = []

    def start(work: Work) -> Background:
        running = Background(work)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


def bridge_spec(
    harness: ScriptedHarness,
    section: dict[str, Any],
    secrets: dict[str, str],
    *,
    folder: Path | None = None,
    steered: str | None = None,
    approvals: str | None = None,
) -> BridgeSpec:
    """A bridge's spec as Link starts it, for `harness`: the channel's section and secrets, its
    folder, the mark of a message that steers, and the control socket it asks the owner at."""
    return BridgeSpec(
        contract=CONTRACT_VERSION,
        agent=AGENT,
        endpoint=harness.ref,
        section=section,
        secrets=dict(secrets),
        folder=str(folder) if folder else None,
        steered=steered,
        approvals=approvals,
    )


class Connecting:
    """A channel's `connect` running in a thread, as in the owner's terminal: `said` is what the
    terminal shows (the module's `say`), `result` or `error` how it ended."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        module: ModuleType,
        connect: Callable[[], Coroutine[Any, Any, Connected]],
    ) -> None:
        self.said: list[str] = []
        self.result: Connected | None = None
        self.error: LinkError | None = None
        monkeypatch.setattr(module, "say", self.said.append)
        self._thread = threading.Thread(target=self._run, args=(connect,), daemon=True)
        self._thread.start()

    def _run(self, connect: Callable[[], Coroutine[Any, Any, Connected]]) -> None:
        try:
            self.result = asyncio.run(connect())
        except LinkError as exc:
            self.error = exc

    def code(self) -> str:
        """The code, once the terminal shows it."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for line in self.said:
                if found := CODE.search(line):
                    return found.group(1)
            if not self._thread.is_alive():
                break
            time.sleep(0.02)
        raise AssertionError(f"no code shown: {self.said}, {self.error}")

    def showed_a_code(self) -> bool:
        return any(CODE.search(line) for line in self.said)

    def done(self, timeout: float = 20) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "connect still waiting"


def connect_program(program: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """`<program> connect --token-stdin` as Link runs it, `env` added to this environment: the
    tokens go to its stdin, the answer comes on its stdout, what the owner reads on its stderr."""
    return subprocess.Popen(
        [program, "connect", "--token-stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def code_shown(process: subprocess.Popen[str], *tokens: str) -> tuple[str, str]:
    """Give a `connect` running in a terminal its tokens, one a line, and read what it shows up to
    the pairing code: the code, and all it showed."""
    assert process.stdin is not None and process.stderr is not None
    process.stdin.write("".join(f"{token}\n" for token in tokens))
    process.stdin.close()
    shown = ""
    while not (found := CODE.search(shown)):
        line = process.stderr.readline()
        assert line, f"connect ended without a code: {shown}"
        shown += line
    return found.group(1), shown


class Clock:
    """The pairing code's clock, moved by the test: its minutes pass at once."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
