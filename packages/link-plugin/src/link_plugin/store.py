"""A harness's release, built once and shared read-only: the store and the link a home holds.

An adapter that installs a large release (a Python environment, an npm tree) builds it in one of
two places:

- **the store**, `share/<adapter>/` in the environment the adapter is installed in (where Link
  installs its plugins, which every sandbox reads and none writes), or the folder its variable
  names (`LNK_HERMES_STORE` for lnk-hermes). An install that can write there (one run outside a
  sandbox) builds the release there once; every agent's home then only names it (a link), so a
  second agent installs nothing.
- **the home**, when the store doesn't hold the release and can't be written (an install run in
  the sandbox, which writes only its home): the release is built in the home itself.

Either is made beside its place and renamed there whole, its mark (the pin's digest) written
last, so a half-finished install is never taken for one. Nothing is written outside the home but
the store, and the store only from outside a sandbox.

    release = Release(adapter="lnk-hermes", folder="hermes-agent-0.19.0", link="hermes-agent",
                      what="Hermes Agent 0.19.0", pin=digest, build=make_venv, runs="bin/python")
    release.install(home)   # what was done, in words
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from link_plugin.errors import LinkError

MARK = ".lnk-release"


@dataclass(frozen=True)
class Release:
    adapter: str
    """The adapter's name: its store's folder (`share/<adapter>`) and variable (`LNK_<ADAPTER>_STORE`)."""
    folder: str
    """The release's folder in the store: it names the version."""
    link: str
    """Its name in a home: a link to the store's, or the release itself."""
    what: str
    """Said in what `install` answers ("Hermes Agent 0.19.0")."""
    pin: str
    """The digest of the pin: a release built from another pin is another release."""
    build: Callable[[Path], None]
    """Fills an empty folder with the release (a LinkError saying why when it can't)."""
    runs: str
    """A file, relative to the release, whose presence says the release is whole."""

    @property
    def variable(self) -> str:
        return variable(self.adapter)

    def store(self) -> Path:
        return store(self.adapter)

    def built(self, folder: Path) -> bool:
        """Whether `folder` is a whole release of this pin (its mark is written last)."""
        try:
            return (folder / MARK).read_text().strip() == self.pin and (folder / self.runs).exists()
        except OSError:
            return False

    def in_home(self, home: Path) -> Path:
        """The release a home runs (through its link, when the store holds it)."""
        return home / self.link

    def installed(self, home: Path) -> bool:
        return self.built(self.in_home(home))

    def install(self, home: Path | None) -> str:
        """The release for the home: the store's, built there first if it can be; else the home's
        own. With no home (run by hand, outside Link), the store's alone. What was done, in words."""
        store = self.store()
        shared = store / self.folder
        if not self.built(shared) and _writable(store):
            self._build(shared)
        if home is None:
            if not self.built(shared):
                raise LinkError(
                    f"The store {store} can't be written, and no agent's home was named to install into.",
                    f"Run it where {store} can be written, or let Link install it for an agent.",
                )
            return f"{self.what} is in the shared store at {shared}"
        home.mkdir(parents=True, exist_ok=True)
        link = self.in_home(home)
        if self.built(shared):
            if not (link.is_symlink() and link.resolve() == shared.resolve()):
                _remove(link)
                link.symlink_to(shared, target_is_directory=True)
            return f"{self.what} from the shared store at {shared}, every file checked"
        if self.built(link) and not link.is_symlink():
            return f"{self.what} is installed in {link}"
        _remove(link)
        self._build(link)
        return f"{self.what} installed in {link}, every file checked against its pin"

    def _build(self, target: Path) -> None:
        building = target.with_name(f"{target.name}.installing-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        try:
            building.mkdir(parents=True)
            self.build(building)
            (building / MARK).write_text(self.pin)
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(target)
            os.rename(building, target)
        finally:
            shutil.rmtree(building, ignore_errors=True)


def variable(adapter: str) -> str:
    """The variable naming an adapter's store: `LNK_HERMES_STORE` for lnk-hermes."""
    return f"LNK_{adapter.removeprefix('lnk-').upper().replace('-', '_')}_STORE"


def store(adapter: str) -> Path:
    """An adapter's store: the folder its variable names, else `share/<adapter>` in the
    environment it is installed in (Link's, where lnk runs too)."""
    named = os.environ.get(variable(adapter))
    return Path(named) if named else Path(sys.prefix) / "share" / adapter


def releases_linked(home: Path, adapter: str) -> list[Path]:
    """The whole releases of the adapter's store that links in `home` name: all an install puts
    outside a home. A harness writes its own home, links included, so a link to anywhere else
    (however it got there) names no release, and nothing acting on releases acts on it."""
    if not home.is_dir():
        return []
    root = store(adapter).resolve()
    found: set[Path] = set()
    for path in home.rglob("*"):  # links to folders are not walked into
        if path.is_symlink():
            target = path.resolve()
            if target.parent == root and not target.is_symlink() and (target / MARK).is_file():
                found.add(target)
    return sorted(found)


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
