"""connect: the token checked, the bot kept to one agent and one program, the owner paired by a code."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import OWNER, STRANGER, send_the_code
from telegram import Bot

from link_plugin.channel import Connected
from link_plugin.errors import ExitCode
from lnk_telegram import connect as connecting
from lnk_telegram.api import make_bot
from lnk_telegram.section import identity
from lnk_testing.channels import CODE, Connecting, connect_program
from lnk_testing.telegram import TOKEN, FakeTelegram, User

BOT = identity(int(TOKEN.split(":")[0]))


def pairing_in(monkeypatch: pytest.MonkeyPatch, *, token: str = TOKEN, probe: int = 1, **kwargs: Any) -> Connecting:
    """connect running as in the owner's terminal."""
    return Connecting(monkeypatch, connecting, lambda: connecting.connect(token, probe=probe, **kwargs))


def _replies(telegram: FakeTelegram, user: User) -> list[str]:
    return telegram.texts(user.id)


def test_the_codes_message_is_confirmed_so_the_bridge_never_reads_it(
    telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset())
    code = pairing.code()
    telegram.private(OWNER, code.lower().replace("-", " "))
    pairing.done()
    assert pairing.result is not None
    assert (pairing.result.identity, pairing.result.secrets) == (BOT, {"bot-token": TOKEN})
    assert telegram.pending == 0, "the code's message is confirmed, so the bridge never reads it"


def test_start_is_answered_with_where_the_code_is(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset())
    code = pairing.code()
    telegram.private(OWNER, "/start")
    telegram.wait(lambda: _replies(telegram, OWNER) == [connecting.START])
    telegram.private(OWNER, f"/start {code}")
    pairing.done()
    assert pairing.result is not None and pairing.result.section["owner"] == OWNER.id


def test_messages_from_before_the_code_pair_nobody(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    telegram.private(STRANGER, "sent before connect")
    pairing = pairing_in(monkeypatch, taken=frozenset())
    telegram.private(OWNER, pairing.code())
    pairing.done()
    assert _replies(telegram, STRANGER) == []


@pytest.fixture
def other_program(telegram: FakeTelegram) -> Iterator[None]:
    """Another program long-polling the same bot, as a second agent or a forgotten script would."""
    stop = threading.Event()

    async def poll() -> None:
        bot: Bot = make_bot(TOKEN)
        async with bot:
            while not stop.is_set():
                try:
                    await bot.get_updates(timeout=1)
                except Exception:
                    await asyncio.sleep(0.05)

    thread = threading.Thread(target=asyncio.run, args=(poll(),), daemon=True)
    thread.start()
    telegram.wait(lambda: telegram.called("getUpdates"))
    yield
    stop.set()
    thread.join(5)


def test_a_bot_another_program_reads_is_refused(
    telegram: FakeTelegram, other_program: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset(), probe=connecting.PROBE)
    pairing.done()
    assert pairing.error is not None and "another program reads this bot's messages" in pairing.error.message
    assert not any(CODE.search(line) for line in pairing.said)


def test_the_executable_pairs_from_the_terminal(telegram: FakeTelegram) -> None:
    process = connect_program(
        "lnk-telegram", {"LNK_AGENT": "main", "LNK_CHANNEL_TAKEN": json.dumps(["telegram-bot:42"])}
    )
    send_the_code(process, telegram)
    assert process.wait(timeout=20) == ExitCode.ANSWERED
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()
    answer = Connected.model_validate_json(out)
    assert (answer.identity, answer.section["owner"]) == (BOT, OWNER.id)
    assert "Paired" in err


def test_the_executable_refuses_what_isnt_a_token(telegram: FakeTelegram) -> None:
    process = connect_program("lnk-telegram", {})
    out, err = process.communicate("not-a-token\n", timeout=20)
    assert process.returncode == ExitCode.FAILED
    assert "doesn't look like a Telegram bot token" in json.loads(out)["error"]
    assert telegram.calls == [], "nothing was sent to Telegram"
