"""`lnk --version` and `lnk plugins`: what a person sees of the plugins on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SCRIPTS
from world import World

from lnk import __version__


def test_version() -> None:
    done = subprocess.run([sys.executable, "-m", "lnk", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert done.stdout.strip() == f"lnk {__version__}"


@pytest.fixture
def junk(world: World, tmp_path: Path) -> Path:
    """On the world's PATH, besides the fixtures: one plugin printing garbage (noting each time it
    is asked in `$HOME/junk`), one that is not executable, and lnk-tally, lnk-mini noting each
    time it is asked in `$HOME/tally`. The folder they are in."""
    junk = tmp_path / "lnk-junk"
    junk.write_text('#!/bin/sh\necho "$1" >> "$HOME/junk"\necho \'this is not json\'\n')
    (tmp_path / "lnk-notexec").write_text("#!/bin/sh\n")
    tally = tmp_path / "lnk-tally"
    tally.write_text(f'#!/bin/sh\necho "$1" >> "$HOME/tally"\nexec "{SCRIPTS / "lnk-mini"}" "$@"\n')
    for program in (junk, tally):
        program.chmod(0o755)
    world.env["PATH"] = f"{tmp_path}{os.pathsep}{world.env['PATH']}"
    return tmp_path


def _listed(world: World) -> dict[str, dict[str, object]]:
    return {entry["executable"]: entry for entry in json.loads(world.lnk("plugins", "--json").stdout)}


def test_plugins_lists_kind_and_version_and_broken_ones_each_asked_once_per_release(world: World, junk: Path) -> None:
    """What a plugin said is kept per release, as for a start: a second `lnk plugins` asks it
    nothing, one upgraded (its program rewritten) is asked again, and one that couldn't answer is
    asked each time, so a fixed one shows at once."""
    listed = _listed(world)
    assert listed["lnk-mini"]["kind"] == "harness"
    assert listed["lnk-mini"]["version"] == 1
    assert listed["lnk-mini"]["error"] is None
    assert listed["lnk-tally"]["kind"] == "harness" and listed["lnk-tally"]["error"] is None
    assert listed["lnk-junk"]["kind"] is None
    assert "not JSON" in str(listed["lnk-junk"]["error"])
    assert "lnk-notexec" not in listed

    table = world.lnk("plugins").stdout
    assert "lnk-mini" in table and "lnk-tally" in table
    assert "broken" in table
    home = Path(world.env["HOME"])
    assert (home / "tally").read_text().split() == ["contract"]
    assert (home / "junk").read_text().split() == ["contract", "contract"]

    os.utime(junk / "lnk-tally", ns=(time.time_ns(), time.time_ns() + 10**9))  # a new release
    assert _listed(world)["lnk-tally"]["kind"] == "harness"
    assert (home / "tally").read_text().split() == ["contract", "contract"]


def test_an_unknown_name_is_told_from_links_own_unasked_and_the_others_asked(world: World, junk: Path) -> None:
    """Link knows the kind of each plugin it ships: the names an unknown harness is told from are
    Link's own, found without asking them, and the others on PATH of that kind, each asked."""
    shipped = junk / "lnk-deepseek"  # Link's own name, noting if it is ever asked
    shipped.write_text('#!/bin/sh\necho "$1" >> "$HOME/deepseek"\nexit 1\n')
    shipped.chmod(0o755)
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    said = " ".join(world.lnk("agent", "use", "nosuch", "work", ok=False).stderr.split())
    assert "no harness 'nosuch'" in said and "deepseek" in said and "tally" in said
    assert "junk" not in said.split("on PATH:")[-1]  # it answered no kind
    home = Path(world.env["HOME"])
    assert not (home / "deepseek").exists()
    assert (home / "tally").read_text().split() == ["contract"]
