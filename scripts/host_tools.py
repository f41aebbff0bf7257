"""What the tests need from the system besides Python packages, found or installed before any test runs.

On a fresh Debian or Ubuntu, `./dev run test` would otherwise fail in many places at once
(tracebacks from every test reaching for bubblewrap or minisign). So it checks first: what is
missing is installed with apt-get, as root or through sudo, as CI does (`.ci/run`); where that
can't be done, it stops at once with one line naming the command that does it.

    python scripts/host_tools.py     # check, install what's missing, or say how
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from glob import glob

COMMANDS: dict[str, str] = {
    "bwrap": "bubblewrap",
    "socat": "socat",
    "minisign": "minisign",
    "curl": "curl",
    "ip": "iproute2",
    "git": "git",
    "node": "nodejs",
    "ssh": "openssh-client",
    "/usr/sbin/sshd": "openssh-server",
}
"""A command the tests run -> the Debian package that has it (sshd by its path: /usr/sbin is on
root's PATH, not always on a user's; the tests run a private sshd on the loopback, never the
system's)."""

LIBRARIES: dict[str, str] = {"libseccomp.so.2": "libseccomp2"}
"""A shared library the tests load -> its Debian package (lnk-sandbox makes its seccomp tables with it)."""

LIBRARY_FOLDERS = ("/usr/lib/*/", "/lib/*/", "/usr/lib/", "/lib/")


def library_found(name: str) -> bool:
    return any(glob(folder + name) for folder in LIBRARY_FOLDERS)


def missing(
    which: Callable[[str], str | None] = shutil.which, library: Callable[[str], bool] = library_found
) -> list[str]:
    """The Debian packages of what isn't here, in a stable order."""
    packages = [package for command, package in COMMANDS.items() if which(command) is None]
    return packages + [package for name, package in LIBRARIES.items() if not library(name)]


@dataclass(frozen=True)
class Plan:
    """What to do about the missing packages: run `steps` (each a command), or stop with `say`."""

    steps: list[list[str]]
    say: str


def plan(packages: Iterable[str], *, root: bool, sudo: bool, apt: bool) -> Plan:
    """Install with apt-get when it is here and may be run (as root, or through sudo); else one line
    naming the command to run."""
    wanted = list(packages)
    if not wanted:
        return Plan([], "")
    install = ["apt-get", "install", "-y", "-qq", *wanted]
    as_root = [] if root else ["sudo"]
    if apt and (root or sudo):
        return Plan(
            [[*as_root, "apt-get", "update", "-qq"], [*as_root, *install]],
            f"installing with apt-get: {' '.join(wanted)}",
        )
    command = " ".join(["apt-get", "install", "-y", *wanted])
    if not apt:
        return Plan([], f"The tests need {', '.join(wanted)}: install them (Debian, Ubuntu: sudo {command}).")
    return Plan([], f"The tests need {', '.join(wanted)}: run `{command}` as root, then run them again.")


def ensure(which: Callable[[str], str | None] = shutil.which) -> str | None:
    """Install what's missing when it can; None when everything is here, else the one line to say."""
    wanted = missing(which)
    chosen = plan(wanted, root=os.geteuid() == 0, sudo=which("sudo") is not None, apt=which("apt-get") is not None)
    if not chosen.steps:
        return chosen.say or None
    print(chosen.say, file=sys.stderr, flush=True)
    environ = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in chosen.steps:
        done = subprocess.run(step, env=environ, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            return f"`{' '.join(step)}` failed (exit {done.returncode}): run it yourself to see why, then test again."
    still = missing(which)
    if still:
        return f"apt-get ran, but {', '.join(still)} is still missing: install it, then run the tests again."
    return None


if __name__ == "__main__":
    problem = ensure()
    if problem:
        print(problem, file=sys.stderr)
    sys.exit(1 if problem else 0)
