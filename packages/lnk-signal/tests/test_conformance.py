"""lnk-signal passes the conformance kit's channel checks (its bridge, run as Link runs it, against
the kit's endpoints and the fake signal-cli)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from conftest import OWNER, SECRETS, STRANGER, section
from lnk_signal.program import ENV_PROGRAM

from link_conformance import ChannelConformance
from link_conformance.suites import Said
from lnk_testing.signal_cli import GROUP, FakeSignal


class TestSignal(ChannelConformance):
    plugin = "lnk-signal"
    bridge_secrets: ClassVar[dict[str, str]] = SECRETS
    bridge_section: ClassVar[dict[str, Any]] = section()
    bridge_env: ClassVar[dict[str, str]] = {}
    signal: ClassVar[FakeSignal]

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _signal(cls) -> Iterator[None]:
        with FakeSignal() as signal:
            cls.signal = signal
            cls.bridge_env = {ENV_PROGRAM: str(signal.program)}
            yield

    def say(self, said: Said) -> None:
        user = OWNER if said.owner else STRANGER
        self.signal.wait(lambda: self.signal.connections > 0)
        if not said.group:
            self.signal.dm(user, said.text)
            return
        ours = self.signal.messages(GROUP)
        quote = ours[-1].timestamp if said.reply and ours else None
        self.signal.group(user, said.text, mention=said.mention, quote=quote)

    def shown(self, group: bool = False) -> list[str]:
        return self.signal.texts(GROUP if group else OWNER.number)
