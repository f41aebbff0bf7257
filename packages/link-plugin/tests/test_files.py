"""Settings files name the line that is wrong; writes are whole or not at all; keys stay 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from link_plugin.files import SettingsError, load_toml, save_toml, write_atomic
from link_plugin.keys import KeyStore
from link_plugin.layout import Layout
from link_plugin.settings import AgentSettings, MachineSettings, new_id


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('id = "abcdefabcdef"\nname = "main"\nowner = \n')
    with pytest.raises(SettingsError, match=r"settings.toml: .*line 3"):
        load_toml(path, AgentSettings)


def test_a_wrong_value_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('id = "abcdefabcdef"\nname = "main"\nowner = "me@here"\n\n[turns]\nbusy = "shout"\n')
    with pytest.raises(SettingsError, match=r"settings.toml, line 6: field 'turns.busy'"):
        load_toml(path, AgentSettings)


def test_settings_round_trip_keeps_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "machine.toml"
    path.write_text("unsandboxed = false\nfuture_switch = 3\n")
    machine = load_toml(path, MachineSettings)
    assert machine.unsandboxed is False
    save_toml(path, machine)
    assert "future_switch = 3" in path.read_text()


def test_write_atomic_leaves_the_old_file_when_it_fails(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text("old")

    with pytest.raises(TypeError):
        write_atomic(path, 12345)  # type: ignore[arg-type]
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.toml"]


def test_keys_are_owner_only(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    store.set("openai", "sk-1")
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert store.get("openai") == "sk-1" and store.secure()
    assert store.delete("openai") and store.get("openai") is None


def test_ids_are_twelve_random_characters() -> None:
    ids = {new_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 12 and i.isalnum() and i.lower() == i for i in ids)


def test_layout_moves_by_environment(tmp_path: Path) -> None:
    layout = Layout.from_env({"LNK_CONFIG_DIR": str(tmp_path / "c"), "LNK_AGENTS_DIR": str(tmp_path / "a")})
    assert layout.agent_config("main").settings == tmp_path / "c" / "agents" / "main" / "settings.toml"
    folder = layout.agent("main")
    folder.create()
    assert sorted(p.name for p in folder.home.iterdir()) == ["instructions", "memory", "skills", "work"]
    assert folder.chats.is_dir()
    assert layout.net("abcdefabcdef") == tmp_path / "c" / "agents" / ".net" / "abcdefabcdef"
