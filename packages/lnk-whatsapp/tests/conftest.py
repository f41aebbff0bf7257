"""A fake WhatsApp engine, a scripted harness and the agent's control socket for every test, and a
bridge running between them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from lnk_whatsapp.bridge import WhatsAppBridge
from lnk_whatsapp.process import ENV_ENGINE

from link_plugin.bridge.carry import Pace
from link_plugin.channel import BridgeSpec
from link_plugin.endpoint import message_id
from lnk_testing.background import Background
from lnk_testing.channels import FAST, Connecting, Work, bridge_spec
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.scenarios import Call, Service, Shown
from lnk_testing.whatsapp import ACCOUNT, GROUP, FakeWhatsApp, chat_of

pytest_plugins = ["lnk_testing.channels"]  # the harness, control, folder and background fixtures

# The package's executables (lnk-whatsapp) sit beside the interpreter running the tests.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

OWNER = "15550001234"
STRANGER = "15550006666"
SECTION = {"owner": OWNER, "account": ACCOUNT}


@pytest.fixture
def whatsapp(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWhatsApp]:
    with FakeWhatsApp() as fake:
        monkeypatch.setenv(ENV_ENGINE, fake.command)
        yield fake


def spec(harness: ScriptedHarness, **options: Any) -> BridgeSpec:
    return bridge_spec(harness, SECTION, {}, **options)


@pytest.fixture
def bridge(
    harness: ScriptedHarness, whatsapp: FakeWhatsApp, folder: Path, background: Callable[[Work], Background]
) -> Callable[..., Background]:
    def start(
        bridge_spec: BridgeSpec | None = None, pace: Pace = FAST, approvals: str | None = None, **kwargs: Any
    ) -> Background:
        options = {"probe": 0.2, "busy": 0.05, "idle": 0.3, "restarts": (0.2, 1.0), **kwargs}
        made = WhatsAppBridge(bridge_spec or spec(harness, folder=folder, approvals=approvals), pace=pace, **options)
        running = background(made.run)
        whatsapp.wait(lambda: whatsapp.running or running.error is not None)
        return running

    return start


class WhatsAppService(Service):
    """The fake engine as the shared scenarios drive it."""

    channel = "whatsapp"
    owner_id = OWNER
    limit = 65536
    CALLS: ClassVar[dict[Call, tuple[str, ...]]] = {"send": ("send",), "edit": ("edit",)}

    def __init__(self, whatsapp: FakeWhatsApp) -> None:
        self.fake = self.whatsapp = whatsapp

    def send(self, text: str, *, stranger: bool = False, group: bool = False, reply_to: str | None = None) -> str:
        sender = STRANGER if stranger else OWNER
        if group:
            sent = self.whatsapp.group(sender, text, mention=True, quoted=reply_to)
        else:
            sent = self.whatsapp.dm(sender, text, quoted=reply_to)
        return message_id(sender, sent)

    def press(self, message: str, value: str, *, stranger: bool = False) -> None:
        pytest.skip("a linked device sends no buttons: the owner answers a question with yes or no")

    def connecting(self, monkeypatch: pytest.MonkeyPatch, *, taken: bool = False, **options: Any) -> Connecting:
        pytest.skip("the owner is the number typed at connect: no code to send (test_connect.py)")

    def refused(self, monkeypatch: pytest.MonkeyPatch) -> tuple[Connecting, str]:
        pytest.skip("WhatsApp is linked as a device: no token to refuse (test_connect.py)")

    def chat(self, *, stranger: bool = False, group: bool = False) -> str:
        return GROUP if group else chat_of(STRANGER if stranger else OWNER)

    def shown(self, chat: str) -> list[Shown]:
        return [Shown(s.history, s.id) for s in self.whatsapp.messages(chat)]

    def meet(self) -> None:
        """A linked account may write to any number first."""

    def answering(self, chat: str) -> int:
        return self.whatsapp.typing.count(chat)


@pytest.fixture
def service(whatsapp: FakeWhatsApp) -> WhatsAppService:
    return WhatsAppService(whatsapp)
