"""The CPU each `lnk agent` command a person types often costs, and what it imports.

    python benchmarks/commands.py [--runs 5] [--against SRC]

Each command runs as a person runs it (the installed `lnk`), in a throwaway Link whose agent has a
key: `list`, `status`, `stop` (of an agent not running), `keys set`, `connect` (Telegram, until its
plugin refuses a token that isn't one: the whole of lnk's part) and `start` with lnk-mini and no
sandbox, the command's part only: its CPU and that of every process it waits for (the plugins it
asks), not the agent's services it leaves running, which are stopped after each start. The CPU is
the user + system seconds the kernel counts for the command's process tree (RUSAGE_CHILDREN); the
median of the runs is printed, beside `python -c pass` and `lnk --version` measured in turn with
them, so a slower moment of the machine slows the anchors too.

With `--against SRC` (another checkout's `packages/lnk-core/src`), each command also runs with
that lnk first on the path, in turn with this one, and the ratio of the two is printed: how much
a change saved. Then each command under `python -X importtime`: its imports' time and the biggest.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from common import AGENT, KEY, PYTHON, Link, load, throwaway_link

from lnk_testing.importtime import imports

LNK = str(Path(PYTHON).with_name("lnk"))


@dataclass(frozen=True)
class Command:
    label: str
    args: tuple[str, ...]
    input: str | None = None
    starts: bool = False
    """It leaves the agent running: stopped after each run, the stop not counted."""


COMMANDS = (
    Command("agent list", ("agent", "list")),
    Command("agent status", ("agent", "status", AGENT)),
    Command("agent stop, not running", ("agent", "stop", AGENT)),
    Command("agent keys set", ("agent", "keys", "set", "openai", AGENT, "--stdin"), input=KEY),
    Command("agent connect, token refused", ("agent", "connect", "telegram", AGENT, "--token-stdin"), "not-a-token"),
    Command("agent start, its own part", ("agent", "start", AGENT, "--harness", "mini", "--no-sandbox"), starts=True),
)
ANCHORS = (Command("python -c pass", ()), Command("lnk --version", ("--version",)))


def cpu(argv: list[str], env: dict[str, str], input: str | None = None) -> float:
    """User + system seconds of `argv` and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        argv,
        env=env,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def env_of(link: Link, source: str | None) -> dict[str, str]:
    """The throwaway Link's environment; with `source`, that lnk imported in place of this one."""
    if source is None:
        return link.env
    return {**link.env, "PYTHONPATH": os.pathsep.join(filter(None, (source, link.env.get("PYTHONPATH"))))}


def run(link: Link, command: Command, source: str | None) -> float:
    argv = [PYTHON, "-c", "pass"] if command.label == "python -c pass" else [LNK, *command.args]
    spent = cpu(argv, env_of(link, source), command.input)
    if command.starts:
        subprocess.run([LNK, "agent", "stop", AGENT], env=link.env, capture_output=True, check=False)
    return spent


def measure(link: Link, runs: int, against: str | None) -> dict[tuple[str, str | None], list[float]]:
    """Every command's CPU per run, this lnk's and `against`'s in turn, after one run of each to
    warm the page cache."""
    sources = [None, against] if against else [None]
    spent: dict[tuple[str, str | None], list[float]] = {}
    for turn in range(runs + 1):
        for command in (*ANCHORS, *COMMANDS):
            for source in sources if command not in ANCHORS else [None]:
                seconds = run(link, command, source)
                if turn:
                    spent.setdefault((command.label, source), []).append(seconds)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", help="another lnk's sources (a checkout's packages/lnk-core/src)")
    args = parser.parse_args()
    against = str(Path(args.against).resolve()) if args.against else None
    print(load())
    with throwaway_link() as link:
        spent = measure(link, args.runs, against)
        bare = statistics.median(spent["python -c pass", None])
        print(f"CPU seconds (user + system), median of {args.runs} runs in turn; anchors in the same runs:")
        for label, source in spent:
            if source is not None:
                continue
            mine = statistics.median(spent[label, None])
            line = f"  {label:<30} {mine:6.3f} s  ({mine / bare:4.1f}x python -c pass)"
            if against and (label, against) in spent:
                theirs = statistics.median(spent[label, against])
                line += f"  against {theirs:6.3f} s: {mine / theirs:.2f}x"
            print(line)
        print("imports (python -X importtime, best of 3): all of them, and the biggest at the top level, ms:")
        for command in COMMANDS:
            env = {**os.environ, **link.env}
            total, biggest = imports([PYTHON, "-m", "lnk", *command.args], env, input=command.input, most=6)
            if command.starts:
                subprocess.run([LNK, "agent", "stop", AGENT], env=link.env, capture_output=True, check=False)
            shown = ", ".join(f"{name} {seconds * 1000:.0f}" for seconds, name in biggest)
            print(f"  {command.label:<30} {total * 1000:5.0f}  ({shown})")
    print(load())


if __name__ == "__main__":
    sys.exit(main())
