"""The executable answers the channel contract's questions."""

from __future__ import annotations

import sys
from pathlib import Path

from link_plugin.calls import PluginProgram
from link_plugin.channel import ChannelState, Describe
from link_plugin.contract import Kind
from link_plugin.harness import Done
from lnk_testing.importtime import loaded


def test_contract_names_the_plugin() -> None:
    answer = PluginProgram("lnk-signal").contract()
    assert (answer.kind, answer.name) == (Kind.CHANNEL, "signal")


def test_describe_says_a_linked_device_with_no_secret_and_its_hosts() -> None:
    answer = PluginProgram("lnk-signal").ask_as(Describe, Kind.CHANNEL, "describe")
    assert answer.title == "Signal"
    assert answer.secrets == [] and answer.device is True
    assert "chat.signal.org" in answer.hosts


def test_a_move_carries_the_device_and_disconnect_forgets_it(tmp_path: Path) -> None:
    program = PluginProgram("lnk-signal")
    device = tmp_path / "device" / "data"
    device.mkdir(parents=True)
    (device / "accounts.json").write_text("{}")
    env = {"LNK_AGENT": "main", "LNK_CHANNEL_DIR": str(tmp_path)}
    assert program.ask_as(ChannelState, Kind.CHANNEL, "state", env=env).paths == ["device"]
    done = program.ask_as(Done, Kind.CHANNEL, "disconnect", env=env)
    assert done.ok and "Linked devices" in (done.detail or "")
    assert not (tmp_path / "device").exists(), "the device's keys are gone from this machine"


def test_contract_describe_and_state_answer_without_the_services_library() -> None:
    """Link asks these whenever it lists, describes or moves the channel: they answer without
    typer, asyncio, httpx or signal-cli's client, which `connect`, `link`, the bridge and
    `cli` load."""
    heavy = {"typer", "asyncio", "httpx", "segno", "lnk_signal.rpc"}
    program = [sys.executable, PluginProgram("lnk-signal").path or "lnk-signal"]
    for command in ("contract", "describe", "state"):
        assert not heavy & loaded([*program, command]), command
