"""Puts this environment's executables (lnk-harness) on PATH, as an installed wheel would be."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
