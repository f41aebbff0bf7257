"""Puts the kit's programs on PATH: lnk-mini and its shapes (console scripts of the kit, beside this
Python), and the kit's own memory engine and channel, lnk-kit-memory and lnk-kit-channel, with
their broken twins."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPTS = Path(sys.executable).parent

if not (SCRIPTS / "lnk-mini").exists():
    raise SystemExit(
        f"lnk-mini is not in {SCRIPTS}: the kit was installed before it had console scripts. "
        "Run `./dev env prune`, then `./dev env create`."
    )


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


os.environ["PATH"] = os.pathsep.join([str(_bin()), str(SCRIPTS), os.environ.get("PATH", "")])
