"""Run a package's benchmarks and print their figures; or every package's, and the table of figures.

python scripts/bench.py lnk-harness            # every benchmark of the package
python scripts/bench.py lnk-sandbox startup    # one of them
python scripts/bench.py tests-e2e crash        # the whole system's, built and installed as the suite does
python scripts/bench.py all                    # every one of them, then the table of figures

A benchmark adds its figure to the table by printing one line per row it measures:

    table-row {"row": "`lnk --version`", "figure": "30 ms", "anchor": "2.1x `python -c pass`", "goal": "<= 150 ms"}

`row` names the row as `TABLE` below does; `anchor` is what the figure was measured against in
the same run (the machine's load moves both). A row no benchmark printed says whose it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "table-row "


@dataclass(frozen=True)
class Row:
    what: str
    goal: str
    owner: str
    """The package whose benchmarks measure it."""


TABLE = (
    Row("`lnk agent start` -> first streamed token of `lnk agent chat` (agent exists)", "<= 2 s", "lnk-core"),
    Row("`lnk agent chat -m hi` round trip on a running agent", "<= 300 ms, no 40 ms stalls", "lnk-core"),
    Row("`lnk --version`", "<= 150 ms", "lnk-core"),
    Row("`lnk-sandbox run -- true`, added over bare `bwrap --ro-bind / / true`", "<= 30 ms", "lnk-sandbox"),
    Row("download through relay + proxy from inside the sandbox", ">= 900 MB/s, >= 1.0x socat", "lnk-sandbox"),
    Row("harness RSS in a real agent (memory tool on)", "<= 60 MiB", "lnk-harness"),
    Row(
        "whole agent (supervisor + harness + sandbox wrappers + memory engine + session), RSS",
        "<= 250 MiB",
        "lnk-core",
    ),
    Row("memory engine RSS", "within the whole agent's 250 MiB", "lnk-link-memory"),
    Row("time to first token at turn 1,000 of one conversation, over the provider", "<= 10 ms", "lnk-harness"),
    Row("conversation with 52,000 events", "<= 10 ms; CPU per turn independent of length", "lnk-harness"),
)


def folders() -> dict[str, Path]:
    """Each package's benchmarks folder, and the end-to-end suite's (the whole system's figures)."""
    found = {p.parent.name: p for p in (ROOT / "packages").glob("*/benchmarks")}
    whole = ROOT / "tests-e2e" / "benchmarks"
    if whole.is_dir():
        found[whole.parent.name] = whole
    return found


def benchmarks(package: str) -> list[Path]:
    # A benchmark is a script; its helpers are modules it imports.
    return sorted(p for p in folders()[package].glob("*.py") if "__main__" in p.read_text())


def run(package: str, script: Path) -> tuple[int, list[dict[str, str]]]:
    """Run one benchmark, its output shown as it comes; its exit code and the table rows it printed."""
    print(f"\n=== {package}: {script.stem} ===", flush=True)
    process = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=script.parent.parent,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    rows = []
    for line in process.stdout:
        print(line, end="", flush=True)
        if line.startswith(MARK):
            try:
                rows.append(json.loads(line[len(MARK) :]))
            except ValueError:
                print(f"(a table row that isn't JSON: {line.strip()!r})", flush=True)
    return process.wait(), rows


def table(rows: list[dict[str, str]]) -> str:
    lines = ["| what | figure | goal | anchor, in the same run |", "| --- | --- | --- | --- |"]
    printed = {row.get("row"): row for row in rows}
    for row in TABLE:
        found = printed.pop(row.what, None)
        if found is not None:
            lines.append(f"| {row.what} | {found.get('figure', '')} | {row.goal} | {found.get('anchor', '')} |")
        else:
            lines.append(f"| {row.what} | no benchmark of {row.owner}'s printed it | {row.goal} | |")
    for name, found in printed.items():  # rows a benchmark added that the table doesn't name yet
        lines.append(f"| {name} | {found.get('figure', '')} | {found.get('goal', '')} | {found.get('anchor', '')} |")
    return "\n".join(lines)


def main(args: list[str]) -> int:
    known = sorted(folders())
    if args[:1] == ["all"]:
        code, rows = 0, []
        for package in known:
            for script in benchmarks(package):
                done, printed = run(package, script)
                code |= done
                rows += printed
        load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
        print(f"\n=== the figures (load average at the end {load}, {os.cpu_count()} cores) ===\n")
        print(table(rows))
        return code
    if not args or args[0] not in known:
        print(f"usage: bench.py all | <package> [benchmark]; packages with benchmarks: {', '.join(known)}")
        return 2
    chosen = [p for p in benchmarks(args[0]) if len(args) < 2 or p.stem == args[1]]
    if not chosen:
        print(f"{args[0]} has no benchmark {args[1]!r}: {', '.join(p.stem for p in benchmarks(args[0]))}")
        return 2
    code = 0
    for script in chosen:
        code |= run(args[0], script)[0]
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
