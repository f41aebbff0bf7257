"""Link's settings folder of each test's own (its rclone.conf), and lnk-bucket run as the core runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from link_plugin.layout import ENV_CONFIG

EXECUTABLE = Path(sys.executable).parent / "lnk-bucket"


class Bucket:
    """`lnk-bucket` as a program: its JSON answer, or its error and exit code."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def call(self, *args: str | Path, ok: bool = True) -> tuple[int, dict[str, Any], str]:
        done = subprocess.run(
            [str(EXECUTABLE), *map(str, args)], capture_output=True, text=True, env=self.env, check=False, timeout=120
        )
        answer = json.loads(done.stdout) if done.stdout.strip() else {}
        if ok:
            assert done.returncode == 0, done.stderr
        return done.returncode, answer, done.stderr

    def __call__(self, *args: str | Path) -> dict[str, Any]:
        return self.call(*args)[1]


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    monkeypatch.setenv(ENV_CONFIG, str(folder))
    return folder


@pytest.fixture
def bucket(config: Path) -> Bucket:
    import os

    return Bucket({**os.environ, ENV_CONFIG: str(config)})
