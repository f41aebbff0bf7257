"""lnk-telegram passes the conformance kit's channel checks (its bridge against the kit's endpoints)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from conftest import OWNER, STRANGER

from link_conformance import ChannelConformance
from link_conformance.suites import Said
from lnk_telegram.api import ENV_API
from lnk_testing.telegram import TOKEN, FakeTelegram

GROUP = -100424242


class TestTelegram(ChannelConformance):
    plugin = "lnk-telegram"
    bridge_secrets: ClassVar[dict[str, str]] = {"bot-token": TOKEN}
    bridge_section: ClassVar[dict[str, Any]] = {"owner": OWNER.id}
    bridge_env: ClassVar[dict[str, str]] = {}
    telegram: ClassVar[FakeTelegram]

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _telegram(cls) -> Iterator[None]:
        with FakeTelegram() as telegram:
            cls.telegram = telegram
            cls.bridge_env = {ENV_API: telegram.origin}
            yield

    def say(self, said: Said) -> None:
        user = OWNER if said.owner else STRANGER
        if not said.group:
            self.telegram.private(user, said.text)
            return
        bot = self.telegram.messages(GROUP)
        replied = bot[-1].message_id if said.reply and bot else None
        self.telegram.group(GROUP, user, said.text, mention=said.mention, reply_to=replied)

    def shown(self, group: bool = False) -> list[str]:
        return self.telegram.texts(GROUP if group else OWNER.id)
