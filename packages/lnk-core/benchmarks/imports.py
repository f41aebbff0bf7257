"""What each program on a start's path imports, and `lnk --version` against `python -c pass`.

    python benchmarks/imports.py [--runs 20]

`lnk --version` and `python -c pass` run in turn, pair by pair, so a slower moment of the machine
slows both: the figure is the median of each and of the pairs' ratios. Goal: 150 ms.

Then each program a start or a chat runs, under `python -X importtime`: the time its imports took
and the biggest of them, so a new import on a hot path shows here before it shows in a start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import PYTHON, load, table_row

from lnk_testing.importtime import imports

GOAL_MS = 150.0
LNK = str(Path(PYTHON).with_name("lnk"))

PATHS: list[tuple[str, list[str], dict[str, str]]] = [
    ("lnk --version", ["-m", "lnk", "--version"], {}),
    ("lnk agent chat -m, to an agent running", ["-c", "import asyncio, lnk.cli, lnk.chat, lnk.runfiles"], {}),
    ("lnk agent chat, starting the agent first", ["-c", "import lnk.cli, lnk.commands.agent, lnk.chat"], {}),
    ("lnk agent start (what it imports)", ["-c", "import lnk.cli, lnk.commands.agent, lnk.prepare"], {}),
    ("python -m lnk.supervisor (before it spawns)", ["-c", "import lnk.supervisor"], {}),
    ("lnk-harness describe (once per release)", ["-m", "lnk_harness", "describe"], {"LNK_PORT": "18800"}),
    (
        "python -m lnk_harness.serve (the endpoint)",
        ["-c", "import lnk_harness.serve as s; s.serve([], None, None)"],
        {},
    ),
]


def paired(runs: int) -> tuple[float, float, float]:
    """(median lnk --version, median python -c pass, median of the pairs' ratios), in seconds."""
    versions, passes, ratios = [], [], []
    for run in range(runs + 1):
        started = time.perf_counter()
        subprocess.run([PYTHON, "-c", "pass"], check=True)
        bare = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run([LNK, "--version"], check=True, stdout=subprocess.DEVNULL)
        version = time.perf_counter() - started
        if run:  # the first warms the page cache
            versions.append(version)
            passes.append(bare)
            ratios.append(version / bare)
    return statistics.median(versions), statistics.median(passes), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(load())
    version, bare, ratio = paired(args.runs)
    print(f"lnk --version, median of {args.runs} run in turn with python -c pass:")
    print(f"  lnk --version   {version * 1000:6.1f} ms  ({version * 1000 / GOAL_MS:.2f} of the 150 ms goal)")
    print(f"  python -c pass  {bare * 1000:6.1f} ms  (lnk --version is {ratio:.1f}x, pair by pair)")
    table_row(
        "`lnk --version`",
        f"{version * 1000:.0f} ms",
        f"{ratio:.1f}x `python -c pass` ({bare * 1000:.0f} ms)",
        "<= 150 ms",
    )
    print("imports on each program's path (python -X importtime, best of 3):")
    for label, argv, env in PATHS:
        total, biggest = imports([PYTHON, *argv], {**os.environ, **env})
        shown = ", ".join(f"{name} {seconds * 1000:.0f}" for seconds, name in biggest)
        print(f"  {label:<46} {total * 1000:6.0f} ms  ({shown})")
    print(load())


if __name__ == "__main__":
    sys.exit(main())
