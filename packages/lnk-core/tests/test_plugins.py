"""`lnk --version` and `lnk plugins`: what a person sees of the plugins on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lnk import __version__


def lnk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lnk", *args], capture_output=True, text=True, env=env or os.environ, timeout=120
    )


def test_version() -> None:
    done = lnk("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"lnk {__version__}"


@pytest.fixture
def junk_path(tmp_path: Path) -> dict[str, str]:
    """PATH with, besides the fixtures, one plugin printing garbage and one that is not executable."""
    junk = tmp_path / "lnk-junk"
    junk.write_text("#!/bin/sh\necho 'this is not json'\n")
    junk.chmod(0o755)
    (tmp_path / "lnk-notexec").write_text("#!/bin/sh\n")
    return {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}


def test_plugins_json_lists_kind_and_version_and_broken_ones(junk_path: dict[str, str]) -> None:
    done = lnk("plugins", "--json", env=junk_path)
    assert done.returncode == 0, done.stderr
    listed = {entry["executable"]: entry for entry in json.loads(done.stdout)}
    assert listed["lnk-mini"]["kind"] == "harness"
    assert listed["lnk-mini"]["version"] == 1
    assert listed["lnk-mini"]["error"] is None
    assert listed["lnk-junk"]["kind"] is None
    assert "not JSON" in listed["lnk-junk"]["error"]
    assert "lnk-notexec" not in listed


def test_plugins_table_shows_broken(junk_path: dict[str, str]) -> None:
    done = lnk("plugins", env=junk_path)
    assert done.returncode == 0, done.stderr
    assert "lnk-mini" in done.stdout
    assert "broken" in done.stdout
