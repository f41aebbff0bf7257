"""connect: the token checked, the bot kept to one agent and one program, the owner paired by a code."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import CODE, OWNER, STRANGER, send_the_code
from telegram import Bot

from link_plugin.bridge.pairing import LIMITED, PAIRED, TRIES, WRONG, expired_text
from link_plugin.channel import Connected
from link_plugin.errors import ExitCode
from lnk_telegram import connect as connecting
from lnk_telegram.api import make_bot
from lnk_telegram.section import identity
from lnk_testing.channels import Clock, Connecting
from lnk_testing.telegram import TOKEN, FakeTelegram, User

BOT = identity(int(TOKEN.split(":")[0]))


def pairing_in(monkeypatch: pytest.MonkeyPatch, *, token: str = TOKEN, probe: int = 1, **kwargs: Any) -> Connecting:
    """connect running as in the owner's terminal."""
    return Connecting(monkeypatch, connecting, lambda: connecting.connect(token, probe=probe, **kwargs))


def _replies(telegram: FakeTelegram, user: User) -> list[str]:
    return telegram.texts(user.id)


def test_the_owner_sends_the_code_and_is_paired(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset())
    code = pairing.code()
    telegram.private(OWNER, code.lower().replace("-", " "))
    pairing.done()
    assert pairing.result is not None
    assert pairing.result.identity == BOT
    assert pairing.result.section["owner"] == OWNER.id
    assert pairing.result.secrets == {"bot-token": TOKEN}
    assert TOKEN not in json.dumps(pairing.result.section)
    assert _replies(telegram, OWNER) == [PAIRED]
    assert any("Paired" in line and str(OWNER.id) in line for line in pairing.said), "the terminal says so"
    assert telegram.pending == 0, "the code's message is confirmed, so the bridge never reads it"


def test_a_wrong_code_is_told_and_the_right_one_still_pairs(
    telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset())
    code = pairing.code()
    telegram.private(STRANGER, "AAAA-BBBB")
    telegram.wait(lambda: _replies(telegram, STRANGER) == [WRONG])
    telegram.private(OWNER, "/start")
    telegram.wait(lambda: _replies(telegram, OWNER) == [connecting.START])
    telegram.private(OWNER, f"/start {code}")
    pairing.done()
    assert pairing.result is not None and pairing.result.section["owner"] == OWNER.id


def test_wrong_tries_are_limited_even_when_the_next_is_right(
    telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset())
    code = pairing.code()
    for guess in range(TRIES):
        telegram.private(STRANGER, f"GUESS-{guess:04d}")
    telegram.wait(lambda: len(_replies(telegram, STRANGER)) == TRIES)
    telegram.private(STRANGER, code)
    telegram.wait(lambda: _replies(telegram, STRANGER)[-1:] == [LIMITED])
    assert pairing.result is None, "a limited sender's message isn't even compared"
    telegram.private(OWNER, code)
    pairing.done()
    assert pairing.result is not None and pairing.result.section["owner"] == OWNER.id


def test_a_code_sent_in_a_group_pairs_nobody(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset(), expires=3)
    code = pairing.code()
    telegram.group(-100500, OWNER, code)
    pairing.done()
    assert pairing.result is None and pairing.error is not None


def test_a_code_sent_after_it_expired_pairs_nobody(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    pairing = pairing_in(monkeypatch, taken=frozenset(), expires=60, clock=clock)
    code = pairing.code()
    clock.now += 61  # the code lapsed while connect still listens
    telegram.private(OWNER, code)
    telegram.wait(lambda: _replies(telegram, OWNER) == [expired_text("telegram")])  # connect read it, and said so
    pairing.done()
    assert pairing.result is None
    assert pairing.error is not None and "expired" in pairing.error.message
    assert pairing.error.hint and "again" in pairing.error.hint
    assert telegram.pending == 0, "the code's message is confirmed, so the bridge never reads it"


def test_messages_from_before_the_code_pair_nobody(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    telegram.private(STRANGER, "sent before connect")
    pairing = pairing_in(monkeypatch, taken=frozenset())
    telegram.private(OWNER, pairing.code())
    pairing.done()
    assert _replies(telegram, STRANGER) == []


def test_a_bot_another_agent_has_is_refused(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    pairing = pairing_in(monkeypatch, taken=frozenset({BOT}))
    pairing.done()
    assert pairing.error is not None and "another agent here has @lnk_test_bot" in pairing.error.message
    assert not any(CODE.search(line) for line in pairing.said), "no code for a bot that's taken"


def test_a_refused_token_says_so_without_printing_it(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = "123456789:AAF-not-this-bots-token-00000000000000"
    pairing = pairing_in(monkeypatch, token=wrong, taken=frozenset())
    pairing.done()
    assert pairing.error is not None and "refused the bot token" in pairing.error.message
    assert wrong not in str(pairing.error)


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


def _connect(token: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["lnk-telegram", "connect", "--token-stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def test_the_executable_pairs_from_the_terminal(telegram: FakeTelegram) -> None:
    process = _connect(TOKEN, {"LNK_AGENT": "main", "LNK_CHANNEL_TAKEN": json.dumps(["telegram-bot:42"])})
    send_the_code(process, telegram)
    assert process.wait(timeout=20) == ExitCode.ANSWERED
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()
    answer = Connected.model_validate_json(out)
    assert (answer.identity, answer.section["owner"]) == (BOT, OWNER.id)
    assert "Paired" in err


def test_the_executable_refuses_what_isnt_a_token(telegram: FakeTelegram) -> None:
    process = _connect("not-a-token", {})
    out, err = process.communicate("not-a-token\n", timeout=20)
    assert process.returncode == ExitCode.FAILED
    assert "doesn't look like a Telegram bot token" in json.loads(out)["error"]
    assert telegram.calls == [], "nothing was sent to Telegram"
