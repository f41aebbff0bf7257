"""CPU of a plugin answering what Link asks before a start: `run` against the typer app, side by side.

    python benchmarks/commands.py [--runs 20]

Each command Link asks alone on a command line (`contract`, `describe`, `install`, `start`...)
is answered by `link_plugin.plugin.run` without typer. The same plugin answering through the
typer app of `build(plugin)` (every command introspected, then the line parsed) is the anchor:
what each of these commands cost before. Both run in turn, pair by pair, with `python -c pass`,
so a busier moment of the machine slows all three: the figure is the median CPU (user + system)
of each and the median of the pairs' ratios.

Then what each imports, under `python -X importtime` (best of 3): the sum of the top-level
imports, and the biggest of them.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass

from lnk_testing.importtime import imports

PYTHON = sys.executable
RUNS = 20

MINI = "from link_conformance.mini.adapter import SHAPES, WithSteps\nplugin = WithSteps(SHAPES['lnk-mini'])\n"
HARNESS = "from lnk_harness.adapter import LinkHarness\nplugin = LinkHarness()\n"
VIA_RUN = "from link_plugin.plugin import run\nrun(plugin)\n"
VIA_TYPER = "from link_plugin.plugin import build\nbuild(plugin)()\n"


@dataclass(frozen=True)
class Case:
    label: str
    plugin: str
    """Python that makes `plugin`, as the executable's module does."""
    command: str

    def argv(self, tail: str) -> list[str]:
        return [PYTHON, "-c", self.plugin + tail, self.command]


CASES = (
    Case("lnk-mini contract", MINI, "contract"),
    Case("lnk-mini describe", MINI, "describe"),
    Case("lnk-harness describe", HARNESS, "describe"),
)
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "LNK_PORT": "18800"}
"""Bytecode written where Python looks (by the first run of each, not counted), as an install
does: an editable package under `PYTHONDONTWRITEBYTECODE` would compile every module at every start."""


def cpu(argv: list[str]) -> float:
    """CPU seconds (user + system) the command took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=ENV, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    print(load())
    print(f"CPU per command, median of {args.runs} run in turn (run | typer app | python -c pass):")
    for case in CASES:
        fast, typed, bare, ratios = [], [], [], []
        for attempt in range(args.runs + 1):
            timed = (cpu(case.argv(VIA_RUN)), cpu(case.argv(VIA_TYPER)), cpu([PYTHON, "-c", "pass"]))
            if attempt:  # the first warms the page cache
                fast.append(timed[0])
                typed.append(timed[1])
                bare.append(timed[2])
                ratios.append(timed[0] / timed[1])
        print(
            f"  {case.label:<22} {statistics.median(fast) * 1000:5.0f} ms | {statistics.median(typed) * 1000:5.0f} ms"
            f" | {statistics.median(bare) * 1000:3.0f} ms   run/typer {statistics.median(ratios):.2f}x"
        )
    print("imports (python -X importtime, best of 3):")
    for case in CASES:
        for how, tail in (("run", VIA_RUN), ("typer app", VIA_TYPER)):
            total, biggest = imports(case.argv(tail), ENV, most=5)
            shown = ", ".join(f"{name} {seconds * 1000:.0f}" for seconds, name in biggest)
            print(f"  {case.label:<22} {how:<9} {total * 1000:5.0f} ms  ({shown})")
    print(load())


if __name__ == "__main__":
    sys.exit(main())
