"""Puts the kit's own fixture plugins on PATH: lnk-kit-memory, lnk-kit-channel and broken twins."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def _bin() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="link-conformance-bin-"))
    for name, module, extra in (
        ("lnk-kit-memory", "kit_memory.py", ""),
        ("lnk-kit-memory-broken", "kit_memory.py", "KIT_BROKEN=1 "),
        ("lnk-kit-channel", "kit_channel.py", ""),
        ("lnk-kit-channel-broken", "kit_channel.py", "KIT_BROKEN=1 "),
    ):
        script = folder / name
        script.write_text(f'#!/bin/sh\n{extra}exec "{sys.executable}" "{FIXTURES / module}" "$@"\n')
        script.chmod(0o755)
    return folder


os.environ["PATH"] = f"{_bin()}{os.pathsep}{os.environ.get('PATH', '')}"
