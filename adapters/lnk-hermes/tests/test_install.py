"""`install` as Link runs it: the pinned release, checked, built once and shared read-only; a second
home installs nothing and nothing is written outside the home."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from agent_settings import write_settings
from lnk_hermes import release


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*")) if not p.is_symlink()}


def _install(root: Path) -> dict[str, object]:
    """`install` as Link runs it for the agent whose folder is `root`."""
    env = {**os.environ, "HOME": str(root / "Harnesses" / "hermes"), "LNK_SETTINGS": str(write_settings(root))}
    done = subprocess.run(["lnk-hermes", "install"], env=env, capture_output=True, text=True, check=True)
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_a_second_home_installs_nothing_again(installed: Path, tmp_path: Path) -> None:
    shared = installed / release.folder_name()
    before = _files(shared)
    root = tmp_path / "Agents" / "second"
    answer = _install(root)
    home = root / "Harnesses" / "hermes"
    assert answer["ok"] and "shared store" in str(answer["detail"])
    # The home names the store's release; the store is as it was (nothing written outside the home).
    assert (home / release.LINK).resolve() == shared.resolve()
    assert _files(shared) == before
    assert sorted(p.name for p in home.iterdir()) == [release.LINK]
    version = subprocess.run(
        [*release.hermes(home), "--version"], capture_output=True, text=True, env={"HOME": str(tmp_path)}, check=False
    )
    assert release.HERMES_VERSION in version.stdout + version.stderr


def test_every_pinned_file_has_its_digest() -> None:
    lines = [line for line in release.requirements().decode().splitlines() if line.strip()]
    assert any(line.startswith(f"hermes-agent=={release.HERMES_VERSION} ") for line in lines)
    assert all("==" in line and "--hash=sha256:" in line for line in lines)


def test_an_index_that_cant_be_reached_fails_saying_so_and_leaves_nothing_half_made(tmp_path: Path) -> None:
    home = tmp_path / "home"
    unreachable = {
        "LNK_HERMES_STORE": str(tmp_path / "store"),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",  # the discard port: nothing answers there
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_RETRIES": "0",
        "PIP_TIMEOUT": "3",
    }
    done = subprocess.run(
        ["lnk-hermes", "install"],
        env={**os.environ, "HOME": str(home), **unreachable},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1
    said = json.loads(done.stdout or done.stderr)
    assert "pip couldn't install Hermes Agent 0.19.0" in said["error"] and "PyPI" in said["hint"]
    assert not release.installed(home) and not (home / release.LINK).exists()
    assert [p.name for p in (tmp_path / "store").iterdir()] == []
