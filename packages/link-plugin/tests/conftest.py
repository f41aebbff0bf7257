from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from link_plugin import wire
from lnk_testing.endpoint import ScriptedHarness


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


@pytest.fixture
def harness() -> Iterator[ScriptedHarness]:
    """A harness endpoint answering as scripted (`harness.script`), stopped after the test."""
    served = ScriptedHarness(wire.new_endpoint_key()).start()
    yield served
    served.stop()
