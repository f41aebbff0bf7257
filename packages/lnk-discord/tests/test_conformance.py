"""lnk-discord passes the conformance kit's channel checks (its bridge against the kit's endpoints)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from conftest import GROUP, OWNER, SECRETS, STRANGER, section
from lnk_discord.api import ENV_API

from link_conformance import ChannelConformance
from link_conformance.suites import Said
from lnk_testing.discord import FakeDiscord


class TestDiscord(ChannelConformance):
    plugin = "lnk-discord"
    bridge_secrets: ClassVar[dict[str, str]] = SECRETS
    bridge_section: ClassVar[dict[str, Any]] = {}
    bridge_env: ClassVar[dict[str, str]] = {}
    discord: ClassVar[FakeDiscord]

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _discord(cls) -> Iterator[None]:
        with FakeDiscord() as discord:
            cls.discord = discord
            cls.bridge_env = {ENV_API: discord.origin}
            cls.bridge_section = section(discord)
            yield

    def say(self, said: Said) -> None:
        user = OWNER if said.owner else STRANGER
        self.discord.wait(lambda: self.discord.connections > 0)
        if not said.group:
            self.discord.dm(user, said.text)
            return
        bots = self.discord.messages(GROUP)
        replied = bots[-1].id if said.reply and bots else None
        self.discord.guild(GROUP, user, said.text, mention=said.mention, reply_to=replied)

    def shown(self, group: bool = False) -> list[str]:
        return self.discord.texts(GROUP if group else OWNER.dm)
