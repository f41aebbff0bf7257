"""Tool calls waiting for the owner, where Slack differs: the buttons are Block Kit's, and a press
the agent can't take (it's away) is told in the owner's direct message, since Slack shows no word
for a press (what every channel shares of asking is in test_scenarios.py)."""

from __future__ import annotations

from collections.abc import Callable

from conftest import OWNER, SlackService

from link_plugin.bridge.asking import Said
from lnk_testing.approvals import ControlSocket
from lnk_testing.background import Background
from lnk_testing.endpoint import ScriptedHarness
from lnk_testing.scenarios import questions

Start = Callable[..., Background]


def test_a_press_the_agent_cant_take_is_told_in_the_chat(
    service: SlackService, harness: ScriptedHarness, control: ControlSocket, bridge: Start
) -> None:
    slack = service.slack
    service.meet()
    bridge(approvals=str(control.path))
    called = control.call("words", "erase", {"word": "old"})
    questions(service, control)
    (posted,) = slack.messages(OWNER.dm)
    assert [block["type"] for block in posted.blocks] == ["section", "actions"]
    control.stop()
    slack.press(OWNER, posted, "allow")
    slack.wait(lambda: slack.texts(OWNER.dm)[-1:] == [Said.UNREACHABLE.value])
    assert posted.buttons == ["Allow", "Deny"], "still open: the owner can try again"
    assert called.id not in control.answered and harness.received == []
