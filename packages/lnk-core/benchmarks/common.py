"""A throwaway Link for the benchmarks: its own settings and agents' folders, the conformance kit's
stand-in provider on the loopback (in a process of its own, so no client shares its GIL), and `lnk`
run as a person runs it. Also the anchors every benchmark measures in its own run, and the line
`scripts/bench.py all` gathers into the table of figures.

Programs run as installed: pip compiles a wheel's bytecode as it installs it, while the
packages of this repository are installed editable and, where `PYTHONDONTWRITEBYTECODE` is
set, would compile every module they import at every start (in the sandbox, which can't write
beside the sources, always). So the throwaway Link first compiles them where Python looks.
"""

from __future__ import annotations

import compileall
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from link_conformance.running import free_block
from link_plugin.layout import Layout
from lnk.agents import load_agent

PYTHON = os.path.normpath(os.path.abspath(sys.executable))
"""This environment's interpreter, named without `..` (the sandbox refuses a folder named with it)."""
AGENT = "bench"
"""Not main, whose ports (18800...) a person's main holds; its block is a free one far from 20000,
where the agents of tests running beside it take theirs."""
KEY = "sk-bench-not-a-key"

PACKAGES = ("lnk", "link_plugin", "lnk_harness", "lnk_sandbox", "lnk_link_memory", "link_conformance", "lnk_testing")
"""Every package of this repository a start imports, in or out of the sandbox."""

STAND_IN = """
import sys
from link_conformance.provider import StandInProvider
with StandInProvider(key=sys.argv[1]) as provider:
    print(provider.origin, flush=True)
    sys.stdin.read()
"""


@dataclass
class Link:
    root: Path
    env: dict[str, str]

    def lnk(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(Path(PYTHON).with_name("lnk")), *args],
            input=input,
            capture_output=True,
            text=True,
            env=self.env,
            stdin=None if input is not None else subprocess.DEVNULL,
            timeout=300,
        )
        if done.returncode != 0:
            raise SystemExit(f"lnk {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        argv = [str(Path(PYTHON).with_name("lnk")), *args]
        return subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)


def compiled() -> None:
    """Each package's bytecode written beside its sources, as an install writes it."""
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            compileall.compile_dir(folder, quiet=1)


@contextmanager
def throwaway_link() -> Iterator[Link]:
    """Link's two roots in a temporary folder (outside /tmp, as a real home is), with a stand-in provider."""
    compiled()
    root = Path(tempfile.mkdtemp(prefix="lnk-bench-", dir="/var/tmp"))
    provider = subprocess.Popen([PYTHON, "-c", STAND_IN, KEY], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert provider.stdout is not None and provider.stdin is not None
    origin = provider.stdout.readline().decode().strip()
    (root / "home").mkdir()
    env = {
        **os.environ,
        "HOME": str(root / "home"),
        "LNK_CONFIG_DIR": str(root / "config"),
        "LNK_AGENTS_DIR": str(root / "agents"),
        "LNK_SERVICES": "detached",
        "LNK_UPSTREAM_OPENAI": origin,
        "PATH": f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    link = Link(root, env)
    try:
        link.lnk("agent", "keys", "set", "openai", AGENT, "--stdin", input=KEY)
        agent = load_agent(Layout(config=root / "config", agents=root / "agents"), AGENT)
        first = free_block(4)
        agent.with_settings(ports=list(range(first, first + 3))).save()  # kept by its starts while free
        yield link
    finally:
        subprocess.run(
            [str(Path(PYTHON).with_name("lnk")), "agent", "stop", AGENT], env=env, capture_output=True, check=False
        )
        provider.stdin.close()
        provider.wait()
        shutil.rmtree(root, ignore_errors=True)


def seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def median_of(run: Callable[[], object], times: int) -> float:
    run()  # warm the page cache: every figure is a warm start, as a second start is
    return statistics.median(seconds(run) for _ in range(times))


def python_pass(times: int = 20) -> float:
    """The anchor every start is measured against: an interpreter that starts and does nothing."""
    return median_of(lambda: subprocess.run([PYTHON, "-c", "pass"], check=True), times)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"


def table_row(row: str, figure: str, anchor: str, goal: str) -> None:
    """The line `scripts/bench.py all` reads into the table of figures: one per row measured."""
    print("table-row " + json.dumps({"row": row, "figure": figure, "anchor": anchor, "goal": goal}), flush=True)
