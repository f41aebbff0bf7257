from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def make_plugin(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a plugin executable from Python source; returns its path."""

    def make(name: str, source: str) -> Path:
        module = tmp_path / f"{name.replace('-', '_')}.py"
        module.write_text(source)
        executable = tmp_path / name
        executable.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{module}" "$@"\n')
        executable.chmod(0o755)
        return executable

    return make
