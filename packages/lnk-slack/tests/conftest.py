"""A fake Slack, a scripted harness and the agent's control socket for every test, and a bridge
running between them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from lnk_slack import connect as connecting
from lnk_slack.api import ENV_API
from lnk_slack.bridge import SlackBridge
from lnk_slack.section import identity

from link_plugin.bridge.carry import Pace
from link_plugin.channel import BridgeSpec
from lnk_testing.background import Background
from lnk_testing.channels import FAST, Connecting, Work, bridge_spec
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.scenarios import Call, Service, Shown
from lnk_testing.slack import APP_TOKEN, BOT_TOKEN, FakeSlack, SlackUser

pytest_plugins = ["lnk_testing.channels"]  # the harness, control, folder and background fixtures

# The package's executables (lnk-slack) sit beside the interpreter running the tests.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

OWNER = SlackUser("U0OLIVE", "olive")
STRANGER = SlackUser("U0SAM", "sam")
GROUP = "C0GROUP"
APP = identity("A0LNKTEST")
SECRETS = {"app-token": APP_TOKEN, "bot-token": BOT_TOKEN}


@pytest.fixture
def slack(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        monkeypatch.setenv(ENV_API, fake.api)
        yield fake


def section(slack: FakeSlack) -> dict[str, Any]:
    """What `connect` keeps of the owner and the app."""
    return {
        "owner": OWNER.id,
        "dm": OWNER.dm,
        "team": "Lnk Testing",
        "app_id": slack.app_id,
        "bot_user": slack.bot_user,
    }


def spec(harness: ScriptedHarness, slack: FakeSlack, **options: Any) -> BridgeSpec:
    return bridge_spec(harness, section(slack), SECRETS, **options)


@pytest.fixture
def bridge(
    harness: ScriptedHarness, slack: FakeSlack, folder: Path, background: Callable[[Work], Background]
) -> Callable[..., Background]:
    def start(
        bridge_spec: BridgeSpec | None = None, pace: Pace = FAST, approvals: str | None = None, **kwargs: Any
    ) -> Background:
        options = {"probe": 0.2, "timeout": 2, "busy": 0.05, "idle": 0.3, **kwargs}
        made = SlackBridge(
            bridge_spec or spec(harness, slack, folder=folder, approvals=approvals), pace=pace, **options
        )
        running = background(made.run)
        slack.wait(lambda: slack.connections > 0 or running.error is not None)
        return running

    return start


class SlackService(Service):
    """The fake Slack as the shared scenarios drive it."""

    channel = "slack"
    owner_id = OWNER.id
    limit = 4000
    patient: ClassVar[dict[str, Any]] = {"timeout": 10}
    CALLS: ClassVar[dict[Call, tuple[str, ...]]] = {"send": ("chat.postMessage",), "edit": ("chat.update",)}

    def __init__(self, slack: FakeSlack) -> None:
        self.fake = self.slack = slack

    def send(self, text: str, *, stranger: bool = False, group: bool = False, reply_to: str | None = None) -> str:
        user = STRANGER if stranger else OWNER
        if group:
            return f"{GROUP}:{self.slack.channel(GROUP, user, text, mention=True, thread_ts=reply_to)}"
        return f"{user.dm}:{self.slack.dm(user, text, thread_ts=reply_to)}"

    def press(self, message: str, value: str, *, stranger: bool = False) -> None:
        (posted,) = [p for p in self.slack.messages(OWNER.dm) if p.ts == message]
        self.slack.press(STRANGER if stranger else OWNER, posted, value)

    def connecting(self, monkeypatch: pytest.MonkeyPatch, *, taken: bool = False, **options: Any) -> Connecting:
        held = frozenset({APP}) if taken else frozenset()
        return Connecting(monkeypatch, connecting, lambda: connecting.connect(APP_TOKEN, BOT_TOKEN, held, **options))

    def refused(self, monkeypatch: pytest.MonkeyPatch) -> tuple[Connecting, str]:
        wrong = "xoxb-0000000000-not-this-apps-token"
        return Connecting(monkeypatch, connecting, lambda: connecting.connect(APP_TOKEN, wrong, frozenset())), wrong

    def chat(self, *, stranger: bool = False, group: bool = False) -> str:
        return GROUP if group else (STRANGER if stranger else OWNER).dm

    def shown(self, chat: str) -> list[Shown]:
        return [Shown(p.history, p.ts, tuple(p.buttons)) for p in self.slack.messages(chat)]

    def meet(self) -> None:
        self.slack.meet(OWNER)

    def answering(self, chat: str) -> int:
        return len([call for call in self.slack.called("reactions.add") if call.params["channel"] == chat])


@pytest.fixture
def service(slack: FakeSlack) -> SlackService:
    return SlackService(slack)
