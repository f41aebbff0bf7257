from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Sessions run `python -m lnk_qmd`, and the kit finds lnk-qmd on PATH: this environment's.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture(scope="session", autouse=True)
def installed() -> None:
    """What Link does before it first starts an engine: `install` (QMD from npm, once per environment)."""
    done = subprocess.run(["lnk-qmd", "install"], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
