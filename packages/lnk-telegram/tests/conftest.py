"""A fake Telegram and a scripted harness for every test, and a bridge running between them."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
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


def spec(harness: ScriptedHarness, *, steered: str | None = None, **section: Any) -> BridgeSpec:
    return BridgeSpec(
        contract=CONTRACT_VERSION,
        agent=AGENT,
        endpoint=harness.ref,
        section={"owner": OWNER.id, "bot": "lnk_test_bot", **section},
        secrets={"bot-token": TOKEN},
        steered=steered,
    )


class Running:
    """A bridge on an event loop of its own thread, stopped by `stop` (or when the test ends)."""

    def __init__(self, bridge: TelegramBridge) -> None:
        self.error: BaseException | None = None
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=self._run, args=(bridge,), daemon=True)
        self._thread.start()

    def _run(self, bridge: TelegramBridge) -> None:
        async def main() -> None:
            self._task = asyncio.current_task()
            await bridge.run()

        try:
            self._loop.run_until_complete(main())
        except asyncio.CancelledError:
            pass
        except BaseException as exc:
            self.error = exc
        finally:
            self._loop.close()

    def wait(self, timeout: float = 10.0) -> None:
        self._thread.join(timeout)

    def stop(self) -> None:
        deadline = time.monotonic() + 10
        while self._thread.is_alive() and time.monotonic() < deadline:
            if self._task is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._task.cancel)
            self._thread.join(0.2)


@pytest.fixture
def bridge(harness: ScriptedHarness, telegram: FakeTelegram) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(bridge_spec: BridgeSpec | None = None, pace: Pace = FAST, **kwargs: Any) -> Running:
        running = Running(
            TelegramBridge(bridge_spec or spec(harness), pace=pace, poll=1, probe=0.2, timeout=2.0, **kwargs)
        )
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()
