"""A fake Discord, a scripted harness and the agent's control socket for every test, and a bridge
running between them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from lnk_discord import connect as connecting
from lnk_discord.api import ENV_API
from lnk_discord.bridge import DiscordBridge
from lnk_discord.section import identity

from link_plugin.bridge.carry import Pace
from link_plugin.channel import BridgeSpec
from lnk_testing.background import Background
from lnk_testing.channels import FAST, Connecting, Work, bridge_spec
from lnk_testing.discord import TOKEN, DiscordUser, FakeDiscord
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.scenarios import Call, Service, Shown

pytest_plugins = ["lnk_testing.channels"]  # the harness, control, folder and background fixtures

# The package's executables (lnk-discord) sit beside the interpreter running the tests.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

OWNER = DiscordUser(5550001, "olive")
STRANGER = DiscordUser(5550666, "sam")
GROUP = 8880001
BOT = identity(424242424242424242)
SECRETS = {"bot-token": TOKEN}


@pytest.fixture
def discord(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDiscord]:
    with FakeDiscord() as fake:
        monkeypatch.setenv(ENV_API, fake.origin)
        yield fake


def section(discord: FakeDiscord) -> dict[str, Any]:
    """What `connect` keeps of the owner and the bot."""
    return {"owner": str(OWNER.id), "dm": str(OWNER.dm), "bot": discord.bot.name, "bot_id": str(discord.bot.id)}


def spec(harness: ScriptedHarness, discord: FakeDiscord, **options: Any) -> BridgeSpec:
    return bridge_spec(harness, section(discord), SECRETS, **options)


@pytest.fixture
def bridge(
    harness: ScriptedHarness, discord: FakeDiscord, folder: Path, background: Callable[[Work], Background]
) -> Callable[..., Background]:
    def start(
        bridge_spec: BridgeSpec | None = None, pace: Pace = FAST, approvals: str | None = None, **kwargs: Any
    ) -> Background:
        options = {"probe": 0.2, "busy": 0.05, "idle": 0.3, **kwargs}
        made = DiscordBridge(
            bridge_spec or spec(harness, discord, folder=folder, approvals=approvals), pace=pace, **options
        )
        running = background(made.run)
        discord.wait(lambda: discord.connections > 0 or running.error is not None)
        return running

    return start


class DiscordService(Service):
    """The fake Discord as the shared scenarios drive it."""

    channel = "discord"
    owner_id = str(OWNER.id)
    limit = 2000
    CALLS: ClassVar[dict[Call, tuple[str, ...]]] = {"send": ("POST", "/messages"), "edit": ("PATCH", "")}

    def __init__(self, discord: FakeDiscord) -> None:
        self.fake = self.discord = discord

    def send(self, text: str, *, stranger: bool = False, group: bool = False, reply_to: str | None = None) -> str:
        user = STRANGER if stranger else OWNER
        replied = int(reply_to) if reply_to else None
        if group:
            return str(self.discord.guild(GROUP, user, text, mention=True, reply_to=replied))
        return str(self.discord.dm(user, text, reply_to=replied))

    def press(self, message: str, value: str, *, stranger: bool = False) -> None:
        (sent,) = [s for s in self.discord.messages(OWNER.dm) if s.id == int(message)]
        self.discord.press(STRANGER if stranger else OWNER, sent, value)

    def connecting(self, monkeypatch: pytest.MonkeyPatch, *, taken: bool = False, **options: Any) -> Connecting:
        held = frozenset({BOT}) if taken else frozenset()
        return Connecting(monkeypatch, connecting, lambda: connecting.connect(TOKEN, held, **options))

    def refused(self, monkeypatch: pytest.MonkeyPatch) -> tuple[Connecting, str]:
        wrong = "MTExMTExMTExMTExMTExMTEx.GAAAAA.not-this-bots-token-0000000000"
        return Connecting(monkeypatch, connecting, lambda: connecting.connect(wrong, frozenset())), wrong

    def chat(self, *, stranger: bool = False, group: bool = False) -> str:
        return str(GROUP if group else (STRANGER if stranger else OWNER).dm)

    def shown(self, chat: str) -> list[Shown]:
        return [Shown(s.history, str(s.id), tuple(s.buttons)) for s in self.discord.messages(int(chat))]

    def meet(self) -> None:
        """Discord lets a bot write to whoever shares a server with it: nothing to open."""

    def answering(self, chat: str) -> int:
        return self.discord.typing.count(int(chat))


@pytest.fixture
def service(discord: FakeDiscord) -> DiscordService:
    return DiscordService(discord)
