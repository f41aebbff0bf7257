"""connect: Link's manifest shown, both tokens checked, the app kept to one agent and one
connection, the owner paired by a code shown only once the connection is open."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import OWNER
from lnk_slack import connect as connecting
from lnk_slack.api import socket_client, web_client
from lnk_slack.section import identity

from link_plugin.bridge.pairing import PAIRED
from link_plugin.channel import Connected
from link_plugin.errors import ExitCode
from lnk_testing.channels import CODE, Connecting, code_shown, connect_program
from lnk_testing.slack import APP_TOKEN, BOT_TOKEN, FakeSlack

APP = identity("A0LNKTEST")


def pairing_in(
    monkeypatch: pytest.MonkeyPatch, *, app: str = APP_TOKEN, bot: str = BOT_TOKEN, **kwargs: Any
) -> Connecting:
    """connect running as in the owner's terminal."""
    return Connecting(monkeypatch, connecting, lambda: connecting.connect(app, bot, **kwargs))


def test_the_code_is_shown_once_connected_and_pairs_the_owner(
    slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset())
    code = pairing.code()
    assert slack.connections == 1, "the code is shown once the connection is open"
    slack.dm(OWNER, code.lower().replace("-", " "))
    sent = slack.envelopes[-1].id
    pairing.done()
    assert pairing.result is not None
    assert pairing.result.identity == APP
    assert pairing.result.section["owner"] == OWNER.id and pairing.result.section["dm"] == OWNER.dm
    assert pairing.result.secrets == {"app-token": APP_TOKEN, "bot-token": BOT_TOKEN}
    assert APP_TOKEN not in json.dumps(pairing.result.section) and BOT_TOKEN not in json.dumps(pairing.result.section)
    assert slack.texts(OWNER.dm) == [PAIRED]
    assert any("Paired" in line and OWNER.id in line for line in pairing.said), "the terminal says so"
    # The ack went out before the code was read; the fake reads it on its own socket's thread.
    slack.wait(lambda: slack.was_acked(sent))
    slack.wait(lambda: slack.connections == 0)


@pytest.fixture
def other_program(slack: FakeSlack) -> Iterator[None]:
    """Another program connected to the same app, as a second agent or a forgotten script would be."""
    stop = threading.Event()

    async def hold() -> None:
        socket = socket_client(APP_TOKEN, web_client(BOT_TOKEN))
        await socket.connect()  # type: ignore[no-untyped-call]
        while not stop.is_set():
            await asyncio.sleep(0.05)
        await socket.close()  # type: ignore[no-untyped-call]

    thread = threading.Thread(target=asyncio.run, args=(hold(),), daemon=True)
    thread.start()
    slack.wait(lambda: slack.connections == 1)
    yield
    stop.set()
    thread.join(5)


def test_an_app_another_program_is_connected_to_is_refused(
    slack: FakeSlack, other_program: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset())
    pairing.done()
    assert pairing.error is not None and "another program is connected" in pairing.error.message
    assert not any(CODE.search(line) for line in pairing.said)


def test_refused_tokens_say_which_without_printing_them(slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong_bot = "xoxb-0000000000-not-this-apps-token"
    pairing = pairing_in(monkeypatch, bot=wrong_bot, taken=frozenset())
    pairing.done()
    assert pairing.error is not None and "refused the bot token" in pairing.error.message
    assert wrong_bot not in str(pairing.error)
    wrong_app = "xapp-1-A0OTHER-000-not-this-apps-token"
    pairing = pairing_in(monkeypatch, app=wrong_app, taken=frozenset())
    pairing.done()
    assert pairing.error is not None and "refused the app-level token" in pairing.error.message
    assert wrong_app not in str(pairing.error)
    assert slack.connections == 0


def test_the_executable_shows_the_manifest_and_pairs_from_the_terminal(slack: FakeSlack) -> None:
    process = connect_program("lnk-slack", {"LNK_AGENT": "main", "LNK_CHANNEL_TAKEN": json.dumps(["slack-app:A0ELSE"])})
    assert process.stdin is not None and process.stderr is not None and process.stdout is not None
    code, shown = code_shown(process, BOT_TOKEN, APP_TOKEN)  # in either order
    slack.dm(OWNER, code)
    assert process.wait(timeout=20) == ExitCode.ANSWERED
    answer = Connected.model_validate_json(process.stdout.read())
    assert (answer.identity, answer.section["owner"]) == (APP, OWNER.id)
    manifest = json.loads(shown[shown.index("{") : shown.rindex("}") + 1])
    assert manifest == connecting.manifest("main")
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert manifest["oauth_config"]["scopes"]["bot"] == [
        "app_mentions:read",
        "chat:write",
        "im:history",
        "reactions:write",
    ]
    assert manifest["settings"]["event_subscriptions"]["bot_events"] == ["app_mention", "message.im"]


def test_the_executable_refuses_what_isnt_a_token(slack: FakeSlack) -> None:
    process = connect_program("lnk-slack", {})
    out, err = process.communicate(f"{BOT_TOKEN}\nxoxp-a-user-token\n", timeout=20)
    assert process.returncode == ExitCode.FAILED
    assert "doesn't look like a Slack app-level token" in json.loads(out)["error"]
    assert slack.calls == [], "nothing was sent to Slack"


def test_the_readme_shows_the_manifest_connect_prints() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```json\n(\{\n.*?\n\})\n```", readme, re.S)
    assert [json.loads(block) for block in blocks] == [connecting.manifest("main")]
