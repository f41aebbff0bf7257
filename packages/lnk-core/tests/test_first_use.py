"""A command needing one of Link's plugins that isn't installed installs it on first use from the
signed release index; a wrongly signed one installs nothing and changes nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import BIN
from releases import Minisign, fresh_env, write_index

from lnk.release import ENV_INDEX
from lnk.signing import ENV_DEV_KEY


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Minisign:
    return Minisign.generate(tmp_path_factory.mktemp("key"))


def _lnk(python: Path, env: dict[str, str], *args: str, input: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "lnk", *args], input=input, capture_output=True, text=True, env=env, timeout=300
    )


def _machine(tmp_path: Path, key: Minisign, index: Path) -> tuple[Path, dict[str, str]]:
    python = fresh_env(tmp_path / "env")
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LNK_CONFIG_DIR": str(tmp_path / "config"),
        "LNK_AGENTS_DIR": str(tmp_path / "agents"),
        ENV_INDEX: str(index),
        ENV_DEV_KEY: str(key.public),
    }
    assert _lnk(python, env, "agent", "keys", "set", "openai", "work", "--stdin", input="sk-x").returncode == 0
    assert _lnk(python, env, "agent", "use", "mini", "work").returncode == 0
    return python, env


def test_connect_installs_the_channel_plugin_it_needs(tmp_path: Path, key: Minisign) -> None:
    index = write_index(tmp_path / "release", key, {"lnk-telegram": "0.1.0"})
    python, env = _machine(tmp_path, key, index)
    done = _lnk(python, env, "agent", "connect", "telegram", "work", "--token-stdin", input="x\n")
    assert "Installing lnk-telegram 0.1.0" in done.stderr and "Installed lnk-telegram" in done.stderr
    assert (tmp_path / "env" / "bin" / "lnk-telegram").exists()
    # The release's plugin answers no `describe`: connect stops there, having kept nothing.
    assert done.returncode == 1 and "describe" in done.stderr
    assert "telegram" not in (tmp_path / "config" / "agents" / "work" / "settings.toml").read_text()


def test_a_wrongly_signed_plugin_is_refused_and_nothing_is_installed(tmp_path: Path, key: Minisign) -> None:
    index = write_index(tmp_path / "release", key, {"lnk-telegram": "0.1.0"})
    Minisign.generate(tmp_path / "other").sign(next((index / "files").glob("lnk_telegram-*.whl")))
    python, env = _machine(tmp_path, key, index)
    done = _lnk(python, env, "agent", "connect", "telegram", "work", "--token-stdin", input="x\n")
    assert done.returncode == 1
    assert "Refused the release" in done.stderr
    assert not (tmp_path / "env" / "bin" / "lnk-telegram").exists()
    assert not any((tmp_path / "env").glob("lib/python*/site-packages/lnk_telegram*"))
    assert "telegram" not in (tmp_path / "config" / "agents" / "work" / "settings.toml").read_text()
