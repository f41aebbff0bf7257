"""The package's executable (__SCRIPT__) sits beside the interpreter running the tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
