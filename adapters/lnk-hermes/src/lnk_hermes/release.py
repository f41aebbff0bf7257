"""Hermes Agent as this release pins it, installed once and shared read-only.

The pin is `requirements.txt` beside this module: `hermes-agent` and every package it runs on
(its API server's aiohttp, its MCP client), each as one exact version and the SHA-256 of the one
wheel that may be installed. pip installs it with `--require-hashes --no-deps --only-binary`, so a
file whose digest differs, a package not named, or a build from source stops the install.

A built release is a virtual environment, `hermes-agent-<version>/`, made in one of two places:

- **the store**, `share/lnk-hermes/` in the environment lnk-hermes is installed in (where Link
  installs its plugins, which every sandbox reads and none writes), or `LNK_HERMES_STORE`. An
  install that can write there (one run outside a sandbox) builds the release there once; every
  agent's home then only names it (`hermes-agent` links to it), so a second agent installs nothing.
- **the home**, when the store doesn't hold the release and can't be written (an install run in
  the sandbox, which writes only its home): the release is built in the home itself.

Either is made beside its place and renamed there whole, so a half-finished install is never
taken for one. Nothing is written outside the home but the store, and the store only from outside
a sandbox.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from link_plugin.errors import LinkError

HERMES_VERSION = "0.19.0"
ENV_STORE = "LNK_HERMES_STORE"
LINK = "hermes-agent"
"""The name, in a home, of the release it runs: a link to the store's, or the release itself."""
_MARK = ".lnk-release"
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


def store() -> Path:
    named = os.environ.get(ENV_STORE)
    return Path(named) if named else Path(sys.prefix) / "share" / "lnk-hermes"


def built(folder: Path) -> bool:
    """Whether `folder` is a whole release of this pin (its mark is written last)."""
    try:
        return (folder / _MARK).read_text().strip() == pin() and (folder / "bin" / "python").exists()
    except OSError:
        return False


def release_in(home: Path) -> Path:
    """The release a home runs (through its link, when the store holds it)."""
    return home / LINK


def hermes(home: Path) -> list[str]:
    """The command running Hermes: its own Python, not its scripts, whose first line names the
    folder the release was built in before it was renamed into place."""
    return [str(release_in(home) / "bin" / "python"), "-m", "hermes_cli.main"]


def installed(home: Path) -> bool:
    return built(release_in(home))


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


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def _build(target: Path) -> None:
    """The pinned release, made beside `target` and renamed there once whole (pip's temporary
    files beside it too: nothing goes anywhere else)."""
    building = target.with_name(f"{target.name}.installing-{os.getpid()}")
    scratch = target.with_name(f"{target.name}.scratch-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
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
        (building / _MARK).write_text(pin())
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(target)
        os.rename(building, target)
    finally:
        shutil.rmtree(building, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def install(home: Path | None) -> str:
    """Hermes Agent for the home: the store's release, built there first if it can be; else the
    home's own. With no home (run by hand, outside Link), the store's alone. What was done, in words."""
    _supported()
    shared = store() / folder_name()
    if not built(shared) and _writable(store()):
        _build(shared)
    if home is None:
        if not built(shared):
            raise LinkError(
                f"The store {store()} can't be written, and no agent's home was named to install into.",
                f"Run it where {store()} can be written, or let Link install it for an agent.",
            )
        return f"Hermes Agent {HERMES_VERSION} is in the shared store at {shared}"
    home.mkdir(parents=True, exist_ok=True)
    link = release_in(home)
    if built(shared):
        if not (link.is_symlink() and link.resolve() == shared.resolve()):
            _remove(link)
            link.symlink_to(shared, target_is_directory=True)
        return f"Hermes Agent {HERMES_VERSION} from the shared store at {shared}, every wheel checked"
    if built(link) and not link.is_symlink():
        return f"Hermes Agent {HERMES_VERSION} is installed in {link}"
    _remove(link)
    _build(link)
    return f"Hermes Agent {HERMES_VERSION} installed in {link}, every wheel checked against its pinned SHA-256"


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
