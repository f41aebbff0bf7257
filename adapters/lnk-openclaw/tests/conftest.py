"""OpenClaw installed once per test session into a store outside the repository.

Installing its npm tree takes a minute or more and 650 MB, so the tests share one release, built
by the adapter's own `install` in the user's cache folder (`$XDG_CACHE_HOME/lnk-openclaw`), kept
between runs and keyed by the pin (its folder names the version, its mark the lockfile's digest):
a run after the first installs nothing, and test runs at once build it once
(`lnk_testing.stores`: the others wait for it). npm's own download cache (`~/.npm`) is kept too.
Where npm's registry can't be reached the first time, the session fails saying so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lnk_testing.stores import built_once, cache_of

os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
STORE = cache_of("lnk-openclaw")
os.environ["LNK_OPENCLAW_STORE"] = str(STORE)


@pytest.fixture(scope="session", autouse=True)
def installed() -> Path:
    """What Link does before it first starts OpenClaw: `install` (into the store, once per release)."""
    return built_once(["lnk-openclaw", "install"], "lnk-openclaw", os.environ)
