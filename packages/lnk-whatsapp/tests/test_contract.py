"""The executable answers the channel contract's questions."""

from __future__ import annotations

import sys
from pathlib import Path

from link_plugin.calls import PluginProgram
from link_plugin.channel import ENV_CHANNEL_DIR, ChannelState, Describe
from link_plugin.contract import Kind
from link_plugin.harness import Done
from lnk_testing.importtime import loaded


def test_contract_names_the_plugin() -> None:
    answer = PluginProgram("lnk-whatsapp").contract()
    assert (answer.kind, answer.name) == (Kind.CHANNEL, "whatsapp")


def test_describe_says_it_is_linked_as_a_device_with_no_secrets() -> None:
    answer = PluginProgram("lnk-whatsapp").ask_as(Describe, Kind.CHANNEL, "describe")
    assert answer.title == "WhatsApp"
    assert answer.secrets == [] and answer.device is True
    assert "web.whatsapp.com" in answer.hosts


def test_state_names_the_device_and_disconnect_deletes_it(tmp_path: Path) -> None:
    folder = tmp_path / "whatsapp"
    folder.mkdir(mode=0o700)
    (folder / "device.sqlite3").write_bytes(b"keys")
    program = PluginProgram("lnk-whatsapp")
    env = {ENV_CHANNEL_DIR: str(folder)}
    assert "device.sqlite3" in program.ask_as(ChannelState, Kind.CHANNEL, "state", env=env).paths
    done = program.ask_as(Done, Kind.CHANNEL, "disconnect", env=env)
    assert done.ok and "Linked devices" in (done.detail or "")
    assert list(folder.iterdir()) == [] and folder.stat().st_mode & 0o777 == 0o700


def test_contract_describe_and_state_answer_without_the_services_library() -> None:
    """Link asks these whenever it lists, describes or moves the channel: they answer without
    typer, asyncio, the QR code or the bridge, which `connect`, `link`, the bridge and the
    engine load."""
    heavy = {"typer", "asyncio", "segno", "neonize", "lnk_whatsapp.bridge"}
    program = [sys.executable, PluginProgram("lnk-whatsapp").path or "lnk-whatsapp"]
    for command in ("contract", "describe", "state"):
        assert not heavy & loaded([*program, command]), command
