"""The executable answers the channel contract's questions."""

from __future__ import annotations

import sys

from link_plugin.calls import PluginProgram
from link_plugin.channel import ChannelState, Describe
from link_plugin.contract import Kind
from link_plugin.harness import Done
from lnk_testing.importtime import loaded


def test_contract_names_the_plugin() -> None:
    answer = PluginProgram("lnk-telegram").contract()
    assert (answer.kind, answer.name) == (Kind.CHANNEL, "telegram")


def test_describe_names_the_token_and_the_host() -> None:
    answer = PluginProgram("lnk-telegram").ask_as(Describe, Kind.CHANNEL, "describe")
    assert answer.title == "Telegram"
    assert [field.name for field in answer.secrets] == ["bot-token"]
    assert answer.device is False
    assert answer.hosts == ["api.telegram.org"]


def test_nothing_to_carry_and_nothing_to_forget() -> None:
    program = PluginProgram("lnk-telegram")
    assert program.ask_as(ChannelState, Kind.CHANNEL, "state").paths == []
    assert program.ask_as(Done, Kind.CHANNEL, "disconnect").ok


def test_contract_describe_and_state_answer_without_the_services_library() -> None:
    """Link asks these whenever it lists, describes or moves the channel: they answer without
    python-telegram-bot, httpx or typer, which only `connect` and the bridge load."""
    heavy = {"telegram", "httpx", "typer"}
    program = [sys.executable, PluginProgram("lnk-telegram").path or "lnk-telegram"]
    for command in ("contract", "describe", "state"):
        assert not heavy & loaded([*program, command]), command
