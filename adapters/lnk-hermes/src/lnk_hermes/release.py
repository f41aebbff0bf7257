"""Hermes Agent as this release pins it, installed once and shared read-only.

The pin is `requirements.txt` beside this module: `hermes-agent` and every package it runs on
(its API server's aiohttp, its MCP client), each as one exact version and the SHA-256 of the one
wheel that may be installed. pip installs it with `--require-hashes --no-deps --only-binary`, so a
file whose digest differs, a package not named, or a build from source stops the install.

A built release is a virtual environment, `hermes-agent-<version>/`, in link-plugin's store
(`link_plugin.store`): `share/lnk-hermes/` in the environment lnk-hermes is installed in, or
`LNK_HERMES_STORE`, which every sandbox reads and none writes; every agent's home links to it
(`hermes-agent`), or holds its own when the store can't be written from where it installs.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.store import Release

HERMES_VERSION = "0.19.0"
LINK = "hermes-agent"
"""The name, in a home, of the release it runs: a link to the store's, or the release itself."""
_INSTALL_SECONDS = 1800
_PYTHON = (3, 11)
"""The wheels pinned are CPython 3.11's: the environment is made with this Python."""


def folder_name() -> str:
    return f"hermes-agent-{HERMES_VERSION}"


def requirements() -> bytes:
    return importlib.resources.files("lnk_hermes").joinpath("requirements.txt").read_bytes()


def pin() -> str:
    """The digest of the pin itself: a release built from another pin is another release."""
    return hashlib.sha256(requirements()).hexdigest()


def _build(building: Path) -> None:
    """The pinned release in `building` (pip's temporary files beside it: nothing goes anywhere else)."""
    scratch = building.with_name(f"{building.name}.scratch")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(building)], check=True, timeout=120)
        pinned = building / "requirements.txt"
        pinned.write_bytes(requirements())
        scratch.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "TMPDIR": str(scratch), "PIP_CACHE_DIR": str(scratch / "pip"), "PIP_NO_INPUT": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(building / "bin" / "python"), "install"]
            + ["--require-hashes", "--no-deps", "--only-binary=:all:", "--no-cache-dir", "-q", "-r", str(pinned)],
            env=env,
            capture_output=True,
            text=True,
            timeout=_INSTALL_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            raise LinkError(
                f"pip couldn't install Hermes Agent {HERMES_VERSION}: {(done.stderr or done.stdout).strip()[-800:]}",
                "Check that PyPI (pypi.org, files.pythonhosted.org) or your pip mirror answers, then install again.",
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


RELEASE = Release(
    adapter="lnk-hermes",
    folder=folder_name(),
    link=LINK,
    what=f"Hermes Agent {HERMES_VERSION}",
    pin=pin(),
    build=_build,
    runs="bin/python",
)


def store() -> Path:
    return RELEASE.store()


def release_in(home: Path) -> Path:
    return RELEASE.in_home(home)


def hermes(home: Path) -> list[str]:
    """The command running Hermes: its own Python, not its scripts, whose first line names the
    folder the release was built in before it was renamed into place."""
    return [str(release_in(home) / "bin" / "python"), "-m", "hermes_cli.main"]


def installed(home: Path) -> bool:
    return RELEASE.installed(home)


def _supported() -> None:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise LinkError(
            f"lnk-hermes installs Hermes Agent for Linux on x86-64; this is {sys.platform} on {platform.machine()}.",
            "Use Link Harness (`lnk agent use link`) on this machine.",
        )
    if sys.version_info[:2] != _PYTHON:
        raise LinkError(
            f"lnk-hermes pins Hermes Agent's wheels for Python {_PYTHON[0]}.{_PYTHON[1]}; "
            f"Link runs on {sys.version_info[0]}.{sys.version_info[1]}.",
            "Use Link Harness (`lnk agent use link`), or Link on Python 3.11.",
        )


def install(home: Path | None) -> str:
    """Hermes Agent for the home (the store's, built there first if it can be), or with no home
    (run by hand, outside Link) the store's alone. What was done, in words."""
    _supported()
    return RELEASE.install(home)
