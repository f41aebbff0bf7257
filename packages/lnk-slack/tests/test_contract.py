"""The executable answers the channel contract's questions."""

from __future__ import annotations

import sys

from link_plugin.calls import PluginProgram
from link_plugin.channel import ChannelState, Describe
from link_plugin.contract import Kind
from link_plugin.harness import Done
from lnk_testing.importtime import loaded


def test_contract_names_the_plugin() -> None:
    answer = PluginProgram("lnk-slack").contract()
    assert (answer.kind, answer.name) == (Kind.CHANNEL, "slack")


def test_describe_names_both_tokens_and_the_hosts() -> None:
    answer = PluginProgram("lnk-slack").ask_as(Describe, Kind.CHANNEL, "describe")
    assert answer.title == "Slack"
    assert [field.name for field in answer.secrets] == ["app-token", "bot-token"]
    assert answer.device is False
    assert "slack.com" in answer.hosts


def test_nothing_to_carry_and_nothing_to_forget() -> None:
    program = PluginProgram("lnk-slack")
    assert program.ask_as(ChannelState, Kind.CHANNEL, "state").paths == []
    assert program.ask_as(Done, Kind.CHANNEL, "disconnect").ok


def test_contract_describe_and_state_answer_without_the_services_library() -> None:
    """Link asks these whenever it lists, describes or moves the channel: they answer without
    slack-sdk, aiohttp or typer, which only `connect` and the bridge load."""
    heavy = {"slack_sdk", "aiohttp", "typer"}
    program = [sys.executable, PluginProgram("lnk-slack").path or "lnk-slack"]
    for command in ("contract", "describe", "state"):
        assert not heavy & loaded([*program, command]), command
