"""lnk-whatsapp passes the conformance kit's channel checks (its bridge, with the fake engine,
against the kit's endpoints)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from conftest import OWNER, SECTION, STRANGER
from lnk_whatsapp.process import ENV_ENGINE

from link_conformance import ChannelConformance
from link_conformance.suites import Said
from link_plugin.channel import ENV_CHANNEL_DIR
from lnk_testing.whatsapp import GROUP, FakeWhatsApp, chat_of


class TestWhatsApp(ChannelConformance):
    plugin = "lnk-whatsapp"
    bridge_section: ClassVar[dict[str, Any]] = SECTION
    bridge_env: ClassVar[dict[str, str]] = {}
    whatsapp: ClassVar[FakeWhatsApp]

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _whatsapp(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
        with FakeWhatsApp() as whatsapp:
            cls.whatsapp = whatsapp
            # The kit starts some bridges with no folder in their spec: the device is where connect left it.
            folder = tmp_path_factory.mktemp("whatsapp")
            cls.bridge_env = {ENV_ENGINE: whatsapp.command, ENV_CHANNEL_DIR: str(folder)}
            yield

    def say(self, said: Said) -> None:
        sender = OWNER if said.owner else STRANGER
        self.whatsapp.wait(lambda: self.whatsapp.running)
        if not said.group:
            self.whatsapp.dm(sender, said.text)
            return
        answers = self.whatsapp.messages(GROUP)
        replied = answers[-1].id if said.reply and answers else None
        self.whatsapp.group(sender, said.text, mention=said.mention, quoted=replied)

    def shown(self, group: bool = False) -> list[str]:
        return self.whatsapp.texts(GROUP if group else chat_of(OWNER))
