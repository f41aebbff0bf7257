"""connect: the token checked, the bot kept to one agent, the Gateway connected with only the
intents it needs, then the owner paired by a code."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import OWNER
from lnk_discord import connect as connecting
from lnk_discord.api import intents
from lnk_discord.section import identity

from link_plugin.bridge.pairing import PAIRED
from link_plugin.channel import Connected
from link_plugin.errors import ExitCode
from lnk_testing.channels import Connecting, code_shown, connect_program
from lnk_testing.discord import TOKEN, FakeDiscord

BOT = identity(424242424242424242)


def pairing_in(monkeypatch: pytest.MonkeyPatch, *, token: str = TOKEN, **kwargs: Any) -> Connecting:
    """connect running as in the owner's terminal."""
    return Connecting(monkeypatch, connecting, lambda: connecting.connect(token, **kwargs))


def test_the_code_is_shown_once_connected_and_pairs_the_owner(
    discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset())
    code = pairing.code()
    assert discord.connections == 1, "the code is shown once the Gateway is connected"
    assert discord.identified == [intents().value], "with only the intents the bridge needs"
    discord.dm(OWNER, code.lower().replace("-", " "))
    pairing.done()
    assert pairing.result is not None
    assert pairing.result.identity == BOT
    assert pairing.result.section["owner"] == str(OWNER.id) and pairing.result.section["dm"] == str(OWNER.dm)
    assert pairing.result.secrets == {"bot-token": TOKEN}
    assert TOKEN not in json.dumps(pairing.result.section)
    assert discord.texts(OWNER.dm) == [PAIRED]
    assert any("Paired" in line and str(OWNER.id) in line for line in pairing.said), "the terminal says so"
    assert any("oauth2/authorize?client_id=" in line for line in pairing.said), "and how to invite the bot"


def test_the_executable_pairs_from_the_terminal(discord: FakeDiscord) -> None:
    process = connect_program("lnk-discord", {"LNK_AGENT": "main", "LNK_CHANNEL_TAKEN": json.dumps(["discord-bot:42"])})
    assert process.stdin is not None and process.stderr is not None and process.stdout is not None
    code, _ = code_shown(process, TOKEN)
    discord.dm(OWNER, code)
    assert process.wait(timeout=20) == ExitCode.ANSWERED
    answer = Connected.model_validate_json(process.stdout.read())
    assert (answer.identity, answer.section["owner"]) == (BOT, str(OWNER.id))


def test_the_executable_refuses_what_isnt_a_token(discord: FakeDiscord) -> None:
    process = connect_program("lnk-discord", {})
    out, err = process.communicate("not-a-token\n", timeout=20)
    assert process.returncode == ExitCode.FAILED
    assert "doesn't look like a Discord bot token" in json.loads(out)["error"]
    assert discord.calls == [], "nothing was sent to Discord"
