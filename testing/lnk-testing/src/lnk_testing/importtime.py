"""What a program imports on its way to an answer, read from `python -X importtime`, for the
benchmarks that keep a program's start lean (lnk-core's `imports`, link-plugin's `commands`).

    total, biggest = imports([python, "-m", "lnk", "--version"], env)

`total` is the sum of the top-level imports (each with all it imported), `biggest` the largest of
them, in seconds: a new import on a hot path shows here before it shows in a start.

`loaded` names every module a program imported, for a test that keeps a library off a command's
path (a channel's `describe` answers without its service's library):

    assert "slack_sdk" not in loaded([sys.executable, shutil.which("lnk-slack"), "describe"])
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

Imports = tuple[float, list[tuple[float, str]]]


def loaded(argv: list[str], env: Mapping[str, str] | None = None) -> set[str]:
    """Every module (top-level or not, by its full name) the program imported before it exited;
    it must exit 0, or this fails with what it said."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def imports(
    argv: list[str], env: Mapping[str, str], *, input: str | None = None, most: int = 4, tries: int = 3
) -> Imports:
    """(seconds all imports took, the `most` biggest top-level imports as (seconds, name)), best of
    `tries`; `input`, if any, is the program's stdin."""
    best: Imports | None = None
    for _ in range(tries):
        done = subprocess.run(
            [argv[0], "-X", "importtime", *argv[1:]],
            env=dict(env),
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        top: list[tuple[float, str]] = []
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or line.count("|") != 2:
                continue
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit() and not name.startswith("  "):  # top level: its own and below
                top.append((int(cumulative) / 1e6, name.strip()))
        total = sum(seconds for seconds, _ in top)
        if best is None or total < best[0]:
            best = (total, sorted(top, reverse=True)[:most])
    assert best is not None
    return best
