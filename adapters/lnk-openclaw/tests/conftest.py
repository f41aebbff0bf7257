"""OpenClaw installed once per test session into a store outside the repository.

Installing its npm tree takes a minute or more and 650 MB, so the tests share one release, built
by the adapter's own `install` in the user's cache folder (`$XDG_CACHE_HOME/lnk-openclaw`), kept
between runs and keyed by the pin (its folder names the version, its mark the lockfile's digest):
a run after the first installs nothing. npm's own download cache (`~/.npm`) is kept too. Where
npm's registry can't be reached the first time, the session fails saying so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
STORE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lnk-openclaw"
os.environ["LNK_OPENCLAW_STORE"] = str(STORE)


@pytest.fixture(scope="session", autouse=True)
def installed() -> Path:
    """What Link does before it first starts OpenClaw: `install` (into the store, once per release)."""
    done = subprocess.run(["lnk-openclaw", "install"], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"lnk-openclaw install failed (is npm's registry reachable?): {done.stdout}"
    return STORE
