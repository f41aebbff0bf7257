"""`install` as Link runs it: the pinned release, checked, built once and shared read-only; a second
home installs nothing and nothing is written outside the home."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from agent_settings import write_settings
from lnk_openclaw import release


def _install(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`install` as Link runs it for the agent whose folder is `root`."""
    given = {**os.environ, "HOME": str(root / "Harnesses" / "openclaw"), "LNK_SETTINGS": str(write_settings(root))}
    return subprocess.run(
        ["lnk-openclaw", "install"], env={**given, **env}, capture_output=True, text=True, timeout=600, check=False
    )


def test_a_second_home_installs_nothing_again(installed: Path, tmp_path: Path) -> None:
    shared = installed / release.RELEASE.folder
    before = {str(p): p.stat().st_mtime_ns for p in shared.iterdir()}
    root = tmp_path / "Agents" / "second"
    answer = json.loads(_install(root).stdout)
    home = root / "Harnesses" / "openclaw"
    assert answer["ok"] and "shared store" in answer["detail"]
    assert (home / release.LINK).resolve() == shared.resolve()
    assert {str(p): p.stat().st_mtime_ns for p in shared.iterdir()} == before
    assert sorted(p.name for p in home.iterdir()) == [release.LINK]
    env = {**os.environ, "LNK_PORT": "20500", "LNK_SETTINGS": str(root / "settings.json")}
    subprocess.run(["lnk-openclaw", "configure"], env=env, capture_output=True, check=True)
    assert {
        str(p): p.stat().st_mtime_ns for p in shared.iterdir()
    } == before  # its state is beside, not in, the release
    version = subprocess.run([*release.openclaw(home, "--version")], capture_output=True, text=True, check=False)
    assert release.OPENCLAW_VERSION in version.stdout + version.stderr
    # OpenClaw's own install script ran at build: nothing is left for it to do at start, read-only.
    assert not (shared / "node_modules" / "openclaw" / release.LIFECYCLE_PENDING).exists()


def test_the_pin_names_openclaw_and_every_package_has_its_integrity() -> None:
    lock = json.loads(release._shipped().joinpath("package-lock.json").read_text())
    packages = {name: entry for name, entry in lock["packages"].items() if name}
    assert packages["node_modules/openclaw"]["version"] == release.OPENCLAW_VERSION
    # Each package npm fetches carries its SHA-512; one inside another's tarball is checked with it.
    assert all(entry.get("integrity", "").startswith("sha512-") or entry.get("inBundle") for entry in packages.values())


def test_a_registry_that_cant_be_reached_fails_saying_so_and_leaves_nothing_half_made(tmp_path: Path) -> None:
    unreachable = {
        "LNK_OPENCLAW_STORE": str(tmp_path / "store"),
        "npm_config_registry": "http://127.0.0.1:9/",  # the discard port: nothing answers there
        "npm_config_cache": str(tmp_path / "npm-cache"),  # nothing cached: npm must ask the registry
        "npm_config_fetch_retries": "0",
        "npm_config_fetch_timeout": "3000",
    }
    done = _install(tmp_path / "Agents" / "first", **unreachable)
    assert done.returncode == 1
    said = json.loads(done.stdout or done.stderr)
    assert f"npm couldn't install OpenClaw {release.OPENCLAW_VERSION}" in said["error"] and "registry" in said["hint"]
    assert not release.RELEASE.installed(tmp_path / "Agents" / "first" / "Harnesses" / "openclaw")
    assert [p.name for p in (tmp_path / "store").iterdir()] == []
