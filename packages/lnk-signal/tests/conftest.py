"""A fake signal-cli (and the Signal behind it), a scripted harness and the agent's control socket
for every test, and a bridge running between them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from lnk_signal.bridge import SignalBridge
from lnk_signal.messages import group_chat, group_id
from lnk_signal.program import ENV_PROGRAM

from link_plugin.bridge.carry import Pace
from link_plugin.channel import BridgeSpec
from lnk_testing.background import Background
from lnk_testing.channels import FAST, Connecting, Work, bridge_spec
from lnk_testing.scenarios import Call, Service, Shown
from lnk_testing.signal_cli import ACCOUNT, GROUP, FakeSignal, SignalUser

pytest_plugins = ["lnk_testing.channels"]  # the harness, control, folder and background fixtures

# The package's executables (lnk-signal) sit beside the interpreter running the tests.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

OWNER = SignalUser("+15550001001", "Olive")
STRANGER = SignalUser("+15550006666", "Sam")
SECRETS: dict[str, str] = {}


@pytest.fixture
def signal(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSignal]:
    with FakeSignal() as fake:
        fake.users[OWNER.number] = OWNER
        fake.users[STRANGER.number] = STRANGER
        monkeypatch.setenv(ENV_PROGRAM, str(fake.program))
        yield fake


def section() -> dict[str, Any]:
    """What `connect` keeps of the account and its owner."""
    return {"account": ACCOUNT.number, "account_uuid": ACCOUNT.uuid, "owner": OWNER.number, "owner_uuid": OWNER.uuid}


def spec(harness: Any, folder: Path, **options: Any) -> BridgeSpec:
    return bridge_spec(harness, section(), SECRETS, folder=folder, **options)


@pytest.fixture
def bridge(
    harness: Any, signal: FakeSignal, folder: Path, background: Callable[[Work], Background]
) -> Callable[..., Background]:
    def start(
        bridge_spec: BridgeSpec | None = None, pace: Pace = FAST, approvals: str | None = None, **kwargs: Any
    ) -> Background:
        options = {"probe": 0.2, "busy": 0.05, "idle": 0.3, **kwargs}
        made = SignalBridge(bridge_spec or spec(harness, folder, approvals=approvals), pace=pace, **options)
        running = background(made.run)
        signal.wait(lambda: signal.connections > 0 or running.error is not None)
        return running

    return start


class SignalService(Service):
    """The fake Signal as the shared scenarios drive it."""

    channel = "signal"
    owner_id = OWNER.number
    limit = 2000
    CALLS: ClassVar[dict[Call, tuple[str, ...]]] = {"send": ("send",), "edit": ("edit",)}

    def __init__(self, signal: FakeSignal) -> None:
        self.fake = self.signal = signal

    def send(self, text: str, *, stranger: bool = False, group: bool = False, reply_to: str | None = None) -> str:
        user = STRANGER if stranger else OWNER
        quote = int(reply_to) if reply_to else None
        if group:
            return self.signal.group(user, text, mention=True, quote=quote)
        return self.signal.dm(user, text, quote=quote)

    def press(self, message: str, value: str, *, stranger: bool = False) -> None:
        raise AssertionError("Signal has no buttons: a question is answered by a yes or no")

    def connecting(self, monkeypatch: pytest.MonkeyPatch, *, taken: bool = False, **options: Any) -> Connecting:
        raise AssertionError("Signal pairs no code: the owner is the number typed (test_connect.py)")

    def refused(self, monkeypatch: pytest.MonkeyPatch) -> tuple[Connecting, str]:
        raise AssertionError("Signal has no token to refuse: the device is linked (test_connect.py)")

    def chat(self, *, stranger: bool = False, group: bool = False) -> str:
        return group_chat(GROUP) if group else (STRANGER if stranger else OWNER).number

    def shown(self, chat: str) -> list[Shown]:
        where = group_id(chat) or chat
        return [Shown(s.history, str(s.timestamp)) for s in self.signal.messages(where)]

    def meet(self) -> None:
        """Signal lets an account write to any number: nothing to open."""

    def answering(self, chat: str) -> int:
        return self.signal.typing.count(group_id(chat) or chat)


@pytest.fixture
def service(signal: FakeSignal) -> SignalService:
    return SignalService(signal)
