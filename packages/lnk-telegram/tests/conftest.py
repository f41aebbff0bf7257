"""A fake Telegram, a scripted harness and the agent's control socket for every test, and a bridge
running between them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from link_plugin.bridge.carry import Pace
from link_plugin.channel import BridgeSpec
from lnk_telegram import connect as connecting
from lnk_telegram.api import ENV_API
from lnk_telegram.bridge import TelegramBridge
from lnk_telegram.section import identity
from lnk_testing.background import Background
from lnk_testing.channels import FAST, Connecting, Work, bridge_spec, code_shown
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.scenarios import Call, Service, Shown
from lnk_testing.telegram import TOKEN, FakeTelegram, User, utf16

pytest_plugins = ["lnk_testing.channels"]  # the harness, control, folder and background fixtures

# The package's executables (lnk-telegram) sit beside the interpreter running the tests.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

OWNER = User(id=5550001, first_name="Olive", username="olive")
STRANGER = User(id=5550666, first_name="Sam", username="sam")
GROUP = -100777
BOT = identity(int(TOKEN.split(":")[0]))


def send_the_code(process: subprocess.Popen[str], telegram: FakeTelegram) -> str:
    """Give a connect running in a terminal the token, and send the code it shows as the owner;
    what the terminal showed up to the code."""
    code, shown = code_shown(process, TOKEN)
    telegram.private(OWNER, code)
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
    kept = {"owner": OWNER.id, "bot": "lnk_test_bot", **section}
    return bridge_spec(harness, kept, {"bot-token": TOKEN}, folder=folder, steered=steered, approvals=approvals)


@pytest.fixture
def bridge(
    harness: ScriptedHarness, telegram: FakeTelegram, folder: Path, background: Callable[[Work], Background]
) -> Callable[..., Background]:
    def start(
        bridge_spec: BridgeSpec | None = None, pace: Pace = FAST, approvals: str | None = None, **kwargs: Any
    ) -> Background:
        options = {"poll": 1, "probe": 0.2, "timeout": 2.0, "busy": 0.05, "idle": 0.3, **kwargs}
        made = TelegramBridge(bridge_spec or spec(harness, folder=folder, approvals=approvals), pace=pace, **options)
        return background(made.run)

    return start


class TelegramService(Service):
    """The fake Bot API as the shared scenarios drive it."""

    channel = "telegram"
    owner_id = OWNER.id
    limit = 4096
    sentence = "Telegram counts 🚀 as two. "
    patient: ClassVar[dict[str, Any]] = {"timeout": 10.0}
    CALLS: ClassVar[dict[Call, tuple[str, ...]]] = {"send": ("sendMessage",), "edit": ("editMessageText",)}

    def __init__(self, telegram: FakeTelegram) -> None:
        self.fake = self.telegram = telegram

    def measure(self, text: str) -> int:
        return utf16(text)

    def send(self, text: str, *, stranger: bool = False, group: bool = False, reply_to: str | None = None) -> str:
        user = STRANGER if stranger else OWNER
        replied = int(reply_to) if reply_to else None
        if group:
            return f"{GROUP}:{self.telegram.group(GROUP, user, text, mention=True, reply_to=replied)}"
        return f"{user.id}:{self.telegram.private(user, text, reply_to=replied)}"

    def press(self, message: str, value: str, *, stranger: bool = False) -> None:
        self.telegram.press(STRANGER if stranger else OWNER, int(message), value)

    def connecting(self, monkeypatch: pytest.MonkeyPatch, *, taken: bool = False, **options: Any) -> Connecting:
        held = frozenset({BOT}) if taken else frozenset()
        return Connecting(monkeypatch, connecting, lambda: connecting.connect(TOKEN, held, probe=1, **options))

    def refused(self, monkeypatch: pytest.MonkeyPatch) -> tuple[Connecting, str]:
        wrong = "123456789:AAF-not-this-bots-token-00000000000000"
        return Connecting(monkeypatch, connecting, lambda: connecting.connect(wrong, frozenset(), probe=1)), wrong

    def chat(self, *, stranger: bool = False, group: bool = False) -> str:
        return str(GROUP if group else (STRANGER if stranger else OWNER).id)

    def shown(self, chat: str) -> list[Shown]:
        return [Shown(m.history, str(m.message_id), tuple(m.buttons)) for m in self.telegram.messages(int(chat))]

    def meet(self) -> None:
        self.telegram.meet(OWNER)

    def answering(self, chat: str) -> int:
        return len([call for call in self.telegram.called("sendChatAction") if str(call.params["chat_id"]) == chat])


@pytest.fixture
def service(telegram: FakeTelegram) -> TelegramService:
    return TelegramService(telegram)
