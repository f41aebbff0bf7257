"""An outside harness's release built once per machine, and linked into each store a test makes.

Building Hermes Agent's environment (pip) or OpenClaw's npm tree takes minutes and hundreds of MB,
and a new store (a new environment's `share/lnk-<harness>`) starts empty. So the release is built
in the user's cache folder (`$XDG_CACHE_HOME/lnk-<harness>`, else `~/.cache/...`) by the adapter's
own `install`, the first time on a machine (on a fresh one, from the registry, as a person's first
install does; later runs find it whole and build nothing), and each store a test makes gets it as
hard links: the same files, in a second, the store's own (a copy where links can't be made).

Several test processes may want it at once (the packages' tests run beside the end-to-end suite):
one builds the cache while the others wait for it (a lock in the cache folder), so a fresh machine
downloads it once.

    cache = built_once(["lnk-openclaw", "install"], "lnk-openclaw", env)
    link_releases(cache, store)   # then `lnk-openclaw install` in `store` finds it whole
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from link_plugin.store import MARK, variable


def cache_of(adapter: str) -> Path:
    """The folder the adapter's releases are kept in on this machine, between runs."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / adapter


def built_once(install: list[str], adapter: str, env: Mapping[str, str]) -> Path:
    """The cache, with the release `install` (the adapter's own command, run with `env`) builds:
    built there the first time on this machine, found whole after. Fails, saying why, when the
    install does (its registry unreachable the first time)."""
    cache = cache_of(adapter)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".building", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per machine; the others wait and find it
        done = subprocess.run(
            install, env={**env, variable(adapter): str(cache)}, capture_output=True, text=True, timeout=1800
        )
    assert done.returncode == 0, f"{adapter} install failed (is its registry reachable?): {done.stderr or done.stdout}"
    return cache


def link_releases(cache: Path, store: Path) -> list[Path]:
    """Every whole release of the cache (its mark written) put into `store` as hard links, renamed
    into place whole as an adapter puts one; one the store holds already is left as it is. The
    releases put there."""
    store.mkdir(parents=True, exist_ok=True)
    linked = []
    for release in sorted(cache.iterdir()):
        target = store / release.name
        if (release / MARK).is_file() and not target.exists():
            _link_tree(release, target)
            linked.append(target)
    return linked


def _link_tree(source: Path, target: Path) -> None:
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    making = target.with_name(f"{target.name}.linking-{os.getpid()}")
    shutil.rmtree(making, ignore_errors=True)
    shutil.copytree(source, making, symlinks=True, copy_function=link)
    try:
        os.rename(making, target)
    except OSError:  # another process put it there first
        shutil.rmtree(making, ignore_errors=True)
