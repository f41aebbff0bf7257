"""`./dev run test` on a machine without bubblewrap, socat or minisign: it installs them with apt-get
when it may, or stops at once with one line naming the command. Tried with a PATH that lacks them
(and a stand-in apt-get that records what it was asked), never by taking them off this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import host_tools
import pytest

SCRIPTS = Path(__file__).resolve().parent.parent
GONE = ("bwrap", "socat", "minisign")


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """A PATH folder with every command of this machine's but bubblewrap, socat, minisign, apt-get and sudo."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = folder / name
            if name in (*GONE, "apt-get", "sudo") or target.exists() or target.is_symlink():
                continue
            target.symlink_to(Path(directory) / name)
    return folder


def _run_tests(path: Path) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PATH": str(path)}
    return subprocess.run(
        [sys.executable, str(SCRIPTS / "test.py"), "scripts"], env=environ, capture_output=True, text=True, timeout=60
    )


def test_without_them_and_no_way_to_install_it_stops_with_one_line(bare: Path) -> None:
    ran = _run_tests(bare)
    assert ran.returncode == 2
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert "apt-get install -y bubblewrap socat minisign" in lines[0]
    assert "===" not in ran.stdout  # no suite ran


def test_as_root_with_apt_it_installs_them(bare: Path, tmp_path: Path) -> None:
    """apt-get is a stand-in here that records its arguments and installs nothing: the run asks it for
    the missing packages, then says in one line what is still missing, without running a suite."""
    asked = tmp_path / "asked"
    apt = bare / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> {asked}\n')
    apt.chmod(0o755)
    ran = _run_tests(bare)
    if os.geteuid() == 0:
        assert asked.read_text().splitlines() == [
            "noninteractive update -qq",
            "noninteractive install -y -qq bubblewrap socat minisign",
        ]
        assert ran.stderr.strip().splitlines() == [
            "installing with apt-get: bubblewrap socat minisign",
            "apt-get ran, but bubblewrap, socat, minisign is still missing: install it, then run the tests again.",
        ]
    else:
        assert not asked.exists()
        assert "run `apt-get install -y bubblewrap socat minisign` as root" in ran.stderr
    assert ran.returncode == 2 and "===" not in ran.stdout


def test_what_is_found_decides() -> None:
    def found_but(*gone: str) -> Callable[[str], str | None]:
        return lambda command: None if command in gone else f"/usr/bin/{command}"

    here = host_tools.missing(found_but(), library=lambda name: True)
    assert here == []
    assert host_tools.plan(here, root=False, sudo=False, apt=False) == host_tools.Plan([], "")
    wanted = host_tools.missing(found_but("bwrap", "minisign"), library=lambda name: False)
    assert wanted == ["bubblewrap", "minisign", "libseccomp2"]
    with_sudo = host_tools.plan(wanted, root=False, sudo=True, apt=True)
    assert with_sudo.steps == [
        ["sudo", "apt-get", "update", "-qq"],
        ["sudo", "apt-get", "install", "-y", "-qq", "bubblewrap", "minisign", "libseccomp2"],
    ]
    as_root = host_tools.plan(wanted, root=True, sudo=False, apt=True)
    assert as_root.steps[1][0] == "apt-get"
    neither = host_tools.plan(wanted, root=False, sudo=False, apt=True)
    assert neither.steps == [] and "`apt-get install -y bubblewrap minisign libseccomp2` as root" in neither.say
    elsewhere = host_tools.plan(wanted, root=False, sudo=True, apt=False)
    assert elsewhere.steps == [] and "sudo apt-get install -y bubblewrap minisign libseccomp2" in elsewhere.say
