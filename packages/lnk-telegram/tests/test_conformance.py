"""lnk-telegram passes the conformance kit's channel checks (its bridge against the kit's endpoints)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from conftest import OWNER

from link_conformance import ChannelConformance
from lnk_telegram.api import ENV_API
from lnk_testing.telegram import TOKEN, FakeTelegram


class TestTelegram(ChannelConformance):
    plugin = "lnk-telegram"
    bridge_secrets: ClassVar[dict[str, str]] = {"bot-token": TOKEN}
    bridge_section: ClassVar[dict[str, Any]] = {"owner": OWNER.id}
    bridge_env: ClassVar[dict[str, str]] = {}

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _telegram(cls) -> Iterator[None]:
        with FakeTelegram() as telegram:
            cls.bridge_env = {ENV_API: telegram.origin}
            yield
