"""Tool calls waiting for the owner, where Discord differs: a press is answered privately (an
ephemeral reply to the interaction), a stranger's with nothing (what every channel shares of
asking is in test_scenarios.py)."""

from __future__ import annotations

from collections.abc import Callable

from conftest import OWNER, STRANGER, DiscordService

from link_plugin.bridge.asking import Said
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.scenarios import waiting

Start = Callable[..., Background]


def test_a_press_is_told_privately_and_a_strangers_gets_nothing(
    service: DiscordService, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    discord = service.discord
    call, question = waiting(service, harness, control, bridge)
    (sent,) = [s for s in discord.messages(OWNER.dm) if s.id == int(question.id)]
    theirs = discord.press(STRANGER, sent, "allow")
    ours = discord.press(OWNER, sent, "allow")
    discord.wait(lambda: ours in discord.responses)
    told = discord.responses[ours]["data"]
    assert told["content"] == Said.ALLOWED.value and told["flags"] & 64, "told privately (ephemeral)"
    assert theirs not in discord.responses, "the stranger's press got no answer at all"
    assert control.answered == {call.id: True}
