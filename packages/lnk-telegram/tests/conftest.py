"""A fake Telegram, a scripted harness and the agent's control socket for every test, and a bridge
running between them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from link_plugin.bridge.carry import Pace
from link_plugin.channel import BridgeSpec
from link_plugin.contract import CONTRACT_VERSION
from lnk_telegram.api import ENV_API
from lnk_telegram.bridge import TelegramBridge
from lnk_testing.background import Background
from lnk_testing.channels import CODE
from lnk_testing.endpoint import AGENT, ScriptedHarness
from lnk_testing.telegram import TOKEN, FakeTelegram, User

pytest_plugins = ["lnk_testing.channels"]  # the harness and control fixtures

# The package's executables (lnk-telegram) sit beside the interpreter running the tests.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

OWNER = User(id=5550001, first_name="Olive", username="olive")
STRANGER = User(id=5550666, first_name="Sam", username="sam")
FAST = Pace(interval=0.1, typing=0.5, hold=10.0, give_up=30.0)


def send_the_code(process: subprocess.Popen[str], telegram: FakeTelegram) -> str:
    """Give a connect running in a terminal the token, and send the code it shows as the owner;
    what the terminal showed up to the code."""
    assert process.stdin is not None and process.stderr is not None
    process.stdin.write(TOKEN + "\n")
    process.stdin.close()
    shown = ""
    while not (found := CODE.search(shown)):
        line = process.stderr.readline()
        assert line, f"connect ended without a code: {shown}"
        shown += line
    telegram.private(OWNER, found.group(1))
    return shown


@pytest.fixture
def telegram(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        monkeypatch.setenv(ENV_API, fake.origin)
        yield fake


def spec(
    harness: ScriptedHarness,
    *,
    steered: str | None = None,
    approvals: str | None = None,
    folder: Path | None = None,
    **section: Any,
) -> BridgeSpec:
    return BridgeSpec(
        contract=CONTRACT_VERSION,
        agent=AGENT,
        endpoint=harness.ref,
        section={"owner": OWNER.id, "bot": "lnk_test_bot", **section},
        secrets={"bot-token": TOKEN},
        folder=str(folder) if folder else None,
        steered=steered,
        approvals=approvals,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The channel's folder, where the bridge notes the answers it showed."""
    return tmp_path / "channels" / "telegram"


@pytest.fixture
def bridge(harness: ScriptedHarness, telegram: FakeTelegram, folder: Path) -> Iterator[Callable[..., Background]]:
    started: list[Background] = []

    def start(bridge_spec: BridgeSpec | None = None, pace: Pace = FAST, **kwargs: Any) -> Background:
        options = {"poll": 1, "probe": 0.2, "timeout": 2.0, "busy": 0.05, "idle": 0.3, **kwargs}
        made = TelegramBridge(bridge_spec or spec(harness, folder=folder), pace=pace, **options)
        running = Background(made.run)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()
