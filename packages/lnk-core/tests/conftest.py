"""Puts the fixture plugins (lnk-mini, lnk-broken) on PATH for every test."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def _bin() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="lnk-core-bin-"))
    mini = FIXTURES / "mini.py"
    for name, extra in (("lnk-mini", ""), ("lnk-broken", "LNK_MINI_BROKEN=1 ")):
        script = folder / name
        script.write_text(f'#!/bin/sh\n{extra}exec "{sys.executable}" "{mini}" "$@"\n')
        script.chmod(0o755)
    return folder


BIN = _bin()
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
