"""A channel's tokens: from stdin in any order, each checked for its shape before anything uses it."""

from __future__ import annotations

import io
import re

import pytest

from link_plugin.bridge.tokens import Token, read_tokens
from link_plugin.errors import LinkError

APP = Token("app-token", "App-level token (xapp-...)", re.compile(r"xapp-[\w-]+"), LinkError("not an app token"))
BOT = Token("bot-token", "Bot token (xoxb-...)", re.compile(r"xoxb-[\w-]+"), LinkError("not a bot token"))


def test_tokens_on_stdin_are_told_apart_by_their_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("xoxb-1-2-abc\n xapp-1-A-9 \n"))
    assert read_tokens([APP, BOT], token_stdin=True) == {"app-token": "xapp-1-A-9", "bot-token": "xoxb-1-2-abc"}


def test_a_missing_or_misshapen_token_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("xoxb-1-2-abc\nxoxb-1-2-abc\n"))
    with pytest.raises(LinkError, match="not an app token"):
        read_tokens([APP, BOT], token_stdin=True)


def test_without_a_terminal_it_says_to_use_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(LinkError) as raised:
        read_tokens([APP, BOT], token_stdin=False)
    assert "app-level token and bot token" in raised.value.message
    assert raised.value.hint and "--token-stdin" in raised.value.hint


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_typed_tokens_are_asked_in_turn_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    typed = iter(["xapp-1-A-9", "xoxp-user-token"])
    asked: list[str] = []
    monkeypatch.setattr("sys.stdin", Terminal())

    def getpass(prompt: str, stream: object = None) -> str:
        asked.append(prompt)
        return next(typed)

    monkeypatch.setattr("getpass.getpass", getpass)
    with pytest.raises(LinkError, match="not a bot token"):
        read_tokens([APP, BOT], token_stdin=False)
    assert asked == ["App-level token (xapp-...): ", "Bot token (xoxb-...): "]
