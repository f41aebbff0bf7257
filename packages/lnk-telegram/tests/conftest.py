"""A fake Telegram, a scripted harness and the agent's control socket for every test, and a bridge
running between them."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from link_plugin import wire
from link_plugin.bridge.carry import Pace
from link_plugin.channel import BridgeSpec
from link_plugin.contract import CONTRACT_VERSION
from lnk_telegram.api import ENV_API
from lnk_telegram.bridge import TelegramBridge
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, ScriptedHarness
from lnk_testing.telegram import TOKEN, FakeTelegram, User

# The package's executables (lnk-telegram) sit beside the interpreter running the tests.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

OWNER = User(id=5550001, first_name="Olive", username="olive")
STRANGER = User(id=5550666, first_name="Sam", username="sam")
FAST = Pace(interval=0.1, typing=0.5, hold=10.0, give_up=30.0)


@pytest.fixture
def telegram(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        monkeypatch.setenv(ENV_API, fake.origin)
        yield fake


@pytest.fixture
def harness() -> Iterator[ScriptedHarness]:
    served = ScriptedHarness(wire.new_endpoint_key()).start()
    yield served
    served.stop()


@pytest.fixture
def control() -> Iterator[ControlSocket]:
    # Short, so the socket's path stays within its 108-byte limit.
    folder = Path(tempfile.mkdtemp(prefix="lnk-tg-", dir="/tmp"))
    served = ControlSocket(folder / "control.sock").start()
    yield served
    served.stop()
    shutil.rmtree(folder, ignore_errors=True)


def spec(
    harness: ScriptedHarness, *, steered: str | None = None, approvals: str | None = None, **section: Any
) -> BridgeSpec:
    return BridgeSpec(
        contract=CONTRACT_VERSION,
        agent=AGENT,
        endpoint=harness.ref,
        section={"owner": OWNER.id, "bot": "lnk_test_bot", **section},
        secrets={"bot-token": TOKEN},
        steered=steered,
        approvals=approvals,
    )


@pytest.fixture
def bridge(harness: ScriptedHarness, telegram: FakeTelegram) -> Iterator[Callable[..., Background]]:
    started: list[Background] = []

    def start(bridge_spec: BridgeSpec | None = None, pace: Pace = FAST, **kwargs: Any) -> Background:
        options = {"poll": 1, "probe": 0.2, "timeout": 2.0, "busy": 0.05, "idle": 0.3, **kwargs}
        made = TelegramBridge(bridge_spec or spec(harness), pace=pace, **options)
        running = Background(made.run)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()
