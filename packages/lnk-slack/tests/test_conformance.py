"""lnk-slack passes the conformance kit's channel checks (its bridge against the kit's endpoints)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from conftest import GROUP, OWNER, SECRETS, STRANGER, section
from lnk_slack.api import ENV_API

from link_conformance import ChannelConformance
from link_conformance.suites import Said
from lnk_testing.slack import FakeSlack


class TestSlack(ChannelConformance):
    plugin = "lnk-slack"
    bridge_secrets: ClassVar[dict[str, str]] = SECRETS
    bridge_section: ClassVar[dict[str, Any]] = {}
    bridge_env: ClassVar[dict[str, str]] = {}
    slack: ClassVar[FakeSlack]

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _slack(cls) -> Iterator[None]:
        with FakeSlack() as slack:
            cls.slack = slack
            cls.bridge_env = {ENV_API: slack.api}
            cls.bridge_section = section(slack)
            slack.meet(OWNER)
            yield

    def say(self, said: Said) -> None:
        user = OWNER if said.owner else STRANGER
        self.slack.wait(lambda: self.slack.connections > 0)
        if not said.group:
            self.slack.dm(user, said.text)
            return
        bots = self.slack.messages(GROUP)
        thread = bots[-1].ts if said.reply and bots else None
        self.slack.channel(GROUP, user, said.text, mention=said.mention, thread_ts=thread)

    def shown(self, group: bool = False) -> list[str]:
        return self.slack.texts(GROUP if group else OWNER.dm)
