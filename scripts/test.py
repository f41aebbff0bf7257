"""Run every package's tests and the end-to-end suite, each in a pytest process of its own, several
at once.

Most of a package's test time is waiting (for a process to start, a socket, a fake service's
answer), so packages run side by side, `--jobs` at a time (LNK_TEST_JOBS, else 3), the largest
first. Each one's output is kept and printed whole when it ends, so the log reads package by
package. Each gets a stretch of test ports of its own (LNK_TEST_PORTS, read by the conformance
kit's `free_block`), so two packages running at once never reach for the same port. The
end-to-end suite starts first, as one of them: it is the longest and mostly waits (for installs,
starts, a schedule's minute), and it runs Link on the ports a person's Link takes (blocks from
20000), which no package's tests reach for. Two runs of it on one machine take turns (a lock in the
temporary folder). The summary gives each folder's wall time and its CPU time, agents that
detached included (scripts/cpu_time.py): on a machine of two cores, the CPU is what the whole run
can't go below.

First, what the tests need from the system (bubblewrap, minisign, ...) is checked, and installed
when it can be (scripts/host_tools.py): a machine without it stops in a second with one line.

python scripts/test.py               # everything
python scripts/test.py lnk-core      # one or more folders by name
python scripts/test.py --jobs 1      # one package at a time
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import host_tools

ROOT = Path(__file__).resolve().parent.parent
E2E = "tests-e2e"
PORTS = range(24000, 32000)
"""The test ports shared out between packages running at once: above the blocks Link gives agents
(from 20000), below the kernel's ephemeral ports."""


def suites() -> list[Path]:
    """Folders with tests: each package and adapter, the conformance kit, then the end-to-end suite last."""
    packages = sorted(
        p.parent
        for folder in ("packages", "adapters")
        for p in (ROOT / folder).glob("*/tests")
        if not p.parent.name.startswith("_")
    )
    others = [ROOT / "conformance-kit", ROOT / "release", ROOT / "scripts", ROOT / "tests-e2e"]
    return packages + [p for p in others if (p / "tests").is_dir() or list(p.glob("test_*.py"))]


TIMES = ROOT / ".dev" / "test-seconds.json"
"""How long each folder's tests took when last run here (not in git: a clone starts without it)."""


def expected(folder: Path, times: dict[str, float]) -> float:
    """How long a folder's tests should take, to start the longest first so that none is left to run
    alone at the end: as long as last time, else a second per 2 kB of test code (a rough mean)."""
    name = str(folder.relative_to(ROOT))
    if name in times:
        return times[name]
    return sum(p.stat().st_size for p in (folder / "tests").rglob("*.py")) / 2000


@dataclass
class Ran:
    name: str
    code: int
    seconds: float
    output: str
    cpu: float | None = None
    """User and system seconds of its tests and everything they started; None if not counted."""
    left: int = 0
    """Processes its tests started that still ran after them."""


def run(folder: Path, ports: range) -> Ran:
    """One folder's tests, its output kept in a file until they end; the end-to-end suite's once no
    other run of it holds the machine's lock."""
    env = {**os.environ, "LNK_TEST_PORTS": f"{ports.start}-{ports.stop - 1}"}
    with contextlib.ExitStack() as held:
        if folder.name == E2E:
            lock = held.enter_context(open(Path(tempfile.gettempdir()) / "lnk-e2e.lock", "w"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        return _pytest(folder, env)


def _pytest(folder: Path, env: dict[str, str]) -> Ran:
    started = time.monotonic()
    with tempfile.TemporaryFile() as output, tempfile.NamedTemporaryFile(suffix=".json") as used:
        code = subprocess.call(
            [sys.executable, str(Path(__file__).with_name("cpu_time.py")), used.name]
            + [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "600"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        output.seek(0)
        text = output.read().decode(errors="replace")
        try:
            counted = json.loads(Path(used.name).read_text())
        except (OSError, ValueError):
            counted = None
    ran = Ran(str(folder.relative_to(ROOT)), code, time.monotonic() - started, text)
    if counted:
        ran.cpu, ran.left = counted["user"] + counted["system"], counted["left"]
    return ran


def seconds(ran: Ran) -> str:
    """Its wall time, its CPU time and what it left running."""
    cpu = "" if ran.cpu is None else f", {ran.cpu:.0f} s CPU"
    left = f", {ran.left} processes left running" if ran.left else ""
    return f"{ran.seconds:.0f} s{cpu}{left}"


def show(ran: Ran) -> None:
    print(f"\n=== {ran.name} ({seconds(ran)}) ===\n{ran.output}", end="", flush=True)


def side_by_side(folders: list[Path], jobs: int) -> list[Ran]:
    """The folders' tests, `jobs` at a time, each on a stretch of ports that is its own while it runs:
    the end-to-end suite first, then the longest first."""
    share = len(PORTS) // jobs
    stretches = [range(PORTS.start + i * share, PORTS.start + (i + 1) * share) for i in range(jobs)]
    try:
        times = {str(k): float(v) for k, v in json.loads(TIMES.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        times = {}
    waiting = sorted(folders, key=lambda folder: (folder.name == E2E, expected(folder, times)), reverse=True)
    results: list[Ran] = []
    running: dict[Future[Ran], range] = {}
    with ThreadPoolExecutor(jobs) as pool:
        while waiting or running:
            while waiting and stretches:
                stretch = stretches.pop()
                running[pool.submit(run, waiting.pop(0), stretch)] = stretch
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                stretches.append(running.pop(future))
                results.append(future.result())
                show(results[-1])
                times[results[-1].name] = round(results[-1].seconds)
    if TIMES.parent.is_dir():
        TIMES.write_text(json.dumps(times, indent=1, sort_keys=True))
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Run the tests of every package, or of those named.")
    parser.add_argument("names", nargs="*", help="folders to test, by name (lnk-core, tests-e2e, ...)")
    parser.add_argument(
        "--jobs", type=int, default=int(os.environ.get("LNK_TEST_JOBS", "3")), help="packages at once (3)"
    )
    args = parser.parse_args(argv)
    chosen = [s for s in suites() if not args.names or s.name in args.names]
    unknown = set(args.names) - {s.name for s in suites()}
    if unknown:
        print(f"no tests named {', '.join(sorted(unknown))}; there are: {', '.join(s.name for s in suites())}")
        return 2
    if args.jobs < 1:
        print(f"--jobs {args.jobs}: give 1 or more packages to run at once")
        return 2
    problem = host_tools.ensure()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    started = time.monotonic()
    results = side_by_side(chosen, args.jobs)
    cpu = sum(ran.cpu or 0 for ran in results)
    print(f"\n=== summary ({time.monotonic() - started:.0f} s, {cpu:.0f} s CPU, {args.jobs} at once) ===")
    for ran in results:
        print(f"{'ok    ' if ran.code == 0 else 'FAILED'} {ran.name} ({seconds(ran)})")
    return 0 if all(ran.code == 0 for ran in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
