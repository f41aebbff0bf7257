"""The executable answers the channel contract's questions."""

from __future__ import annotations

from link_plugin.calls import PluginProgram
from link_plugin.channel import ChannelState, Describe
from link_plugin.contract import Kind
from link_plugin.harness import Done


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
