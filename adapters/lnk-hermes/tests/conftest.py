"""Hermes Agent installed once per test session into a store outside the repository.

Installing its dependency tree takes minutes, so the tests share one release, built by the
adapter's own `install` in the user's cache folder (`$XDG_CACHE_HOME/lnk-hermes`), kept between
runs and keyed by the pinned release (its folder names the version, its mark the pin's digest):
a run after the first installs nothing, and test runs at once build it once
(`lnk_testing.stores`: the others wait for it). Where PyPI can't be reached the first time, the
session fails saying so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lnk_testing.stores import built_once, cache_of

os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
STORE = cache_of("lnk-hermes")
os.environ["LNK_HERMES_STORE"] = str(STORE)


@pytest.fixture(scope="session", autouse=True)
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What Link does before it first starts Hermes: `install` (into the store, once per release)."""
    home = tmp_path_factory.mktemp("install-home")
    return built_once(["lnk-hermes", "install"], "lnk-hermes", {**os.environ, "HOME": str(home)})
