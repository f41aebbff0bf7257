"""A command needing one of Link's plugins that isn't installed installs it on first use from the
signed release index; a wrongly signed one installs nothing and changes nothing. `lnk uninstall`
takes away what lnk installed, saying first exactly what goes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import BIN
from releases import Minisign, fresh_env, write_index
from world import PORTS, process_gone

from link_conformance.running import free_block
from lnk.agents import ENV_PORTS_FROM
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


@pytest.fixture
def short_path() -> Iterator[Path]:
    """A folder whose unix sockets' paths fit their 108 bytes, as tmp_path's may not."""
    folder = Path(tempfile.mkdtemp(prefix="lnk-u", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_uninstall_says_what_goes_then_takes_services_settings_and_plugins(short_path: Path, key: Minisign) -> None:
    tmp_path = short_path
    index = write_index(tmp_path / "release", key, {"lnk-telegram": "0.1.0"})
    python, env = _machine(tmp_path, key, index)
    env.update({"LNK_SERVICES": "detached", ENV_PORTS_FROM: str(free_block(PORTS))})
    _lnk(python, env, "agent", "connect", "telegram", "work", "--token-stdin", input="x\n")
    assert (tmp_path / "env" / "bin" / "lnk-telegram").exists()
    started = _lnk(python, env, "agent", "start", "work", "--no-sandbox")
    assert started.returncode == 0, started.stderr
    state = json.loads(next((tmp_path / "config" / "agents" / ".run").glob("*/state-harness.json")).read_text())
    (tmp_path / "agents" / "work" / "Memory" / "link-memory").mkdir(parents=True)

    asked = _lnk(python, env, "uninstall")  # no terminal, no --yes: it says what goes, and stops
    assert asked.returncode == 1 and "--yes" in asked.stderr
    said = " ".join(asked.stderr.split())
    assert "services of work" in said and "plugin lnk-telegram 0.1.0" in said and str(tmp_path / "config") in said
    assert "lnk-harness" not in said  # what lnk's environment only sees, from elsewhere, isn't lnk's to remove
    assert "agents' folders stay" in said
    assert (tmp_path / "config").exists() and not process_gone(state["pid"])

    assert _lnk(python, env, "uninstall", "--yes").returncode == 0
    assert process_gone(state["pid"])
    assert not (tmp_path / "config").exists()
    assert not (tmp_path / "env" / "bin" / "lnk-telegram").exists()
    assert shutil.which("lnk-telegram", path=str(Path(sys.executable).parent))  # the outer one, untouched
    assert (tmp_path / "agents" / "work" / "Home").is_dir()

    asked = _lnk(python, env, "uninstall", "--agents")
    assert "memory's index" in asked.stderr and str(tmp_path / "agents") in " ".join(asked.stderr.split())
    assert _lnk(python, env, "uninstall", "--agents", "--yes").returncode == 0
    assert not (tmp_path / "agents").exists()
    assert "Nothing of lnk's" in _lnk(python, env, "uninstall", "--agents").stderr
