"""Moving an agent over a local pipe, against `tar | tar` moving the same files in the same run.

    python benchmarks/move.py [--mib 1024] [--runs 3]

An agent with `--mib` MiB of files in its files folder (files of 1 to 16 MiB of random bytes, and
a hundred small ones) is moved from one Link's roots to another's on this machine. Timed:
`lnk agent send bench | lnk agent receive`, from the start of both to the moment receive says
the agent is in place: its files where they go and the agent recorded there, as tar's files are
where they go when tar ends. That is the figure against the anchor, `tar -C src -cf - . | tar -C
dst -xf -` of the same files into a new folder on the same file system, run alternately with the
move (tar, the move, an agent without files; median of `--runs`, each on a fresh folder after a
sync). The agent's start there is not in it: it is what `lnk agent start` costs whatever moved,
and tar starts nothing. So it is printed on its own, as the time to the receipt, which also waits
for what arrived to be on the disk (tar's files aren't, when tar ends). The agent is sent once to
nowhere before the first run, so both read from the page cache and the harness's adapter has
answered before, as for an agent that ran here. The agent without files is the part of every
move that isn't its files (two lnk commands starting); the move less that is the files' own speed
against tar's. Goal: the move at 80% of tar's speed or better (tar's time over the move's: 0.8).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from common import AGENT, KEY, PYTHON, Link, load, table_row, throwaway_link

GOAL = 0.8
EMPTY = "empty"
"""An agent with no files, moved in the same runs: what a move costs whatever it carries."""
LNK = str(Path(PYTHON).with_name("lnk"))


def fill(home: Path, mib: int) -> None:
    """`mib` MiB of files of random bytes: most of it in files of 1 to 16 MiB, a hundred small ones."""
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    for number in range(100):
        (work / f"note-{number}.md").write_bytes(os.urandom(4096))
    left, number = mib, 0
    while left > 0:
        size = min(left, 1 + number % 16)
        (work / f"file-{number}.bin").write_bytes(os.urandom(size << 20))
        left -= size
        number += 1


def tar_pipe(source: Path, into: Path) -> float:
    into.mkdir(parents=True)
    os.sync()
    started = time.perf_counter()
    pack = subprocess.Popen(["tar", "-C", str(source), "-cf", "-", "."], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-C", str(into), "-xf", "-"], stdin=pack.stdout, check=True)
    assert pack.wait() == 0
    return time.perf_counter() - started


def move(link: Link, there: dict[str, str], agent: str = AGENT) -> tuple[float, float]:
    """(seconds until the agent is in place there, seconds until the receipt: running there, on disk)."""
    os.sync()  # what an earlier run wrote is on the disk: no run pays for another's
    started = time.perf_counter()
    send = subprocess.Popen([LNK, "agent", "send", agent], env=link.env, stdout=subprocess.PIPE)
    receive = subprocess.Popen(
        [LNK, "agent", "receive", "--no-sandbox"],
        env=there,
        stdin=send.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert send.stdout is not None and receive.stderr is not None
    send.stdout.close()
    placed = None
    said = []
    for line in receive.stderr:
        said.append(line.decode(errors="replace"))
        if placed is None and line.startswith(b"Received "):
            placed = time.perf_counter() - started
    receive.wait()
    send.wait()
    if receive.returncode != 0 or placed is None:
        raise SystemExit("the move failed:\n" + "".join(said))
    return placed, time.perf_counter() - started


@contextmanager
def elsewhere(link: Link) -> Iterator[dict[str, str]]:
    """A second Link's roots beside the first's: where the agent goes, as on another machine."""
    root = Path(tempfile.mkdtemp(prefix="there-", dir=link.root))
    try:
        yield {
            **link.env,
            "HOME": str(root),
            "LNK_CONFIG_DIR": str(root / "config"),
            "LNK_AGENTS_DIR": str(root / "agents"),
        }
    finally:
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="MiB of files in the agent's files folder")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    with throwaway_link() as link:
        home = link.root / "agents" / AGENT / "Home"
        fill(home, args.mib)
        # Once before the runs: the files into the page cache, and the harness adapter's answers kept,
        # as they are for an agent that ran here before it moves.
        link.lnk("agent", "keys", "set", "openai", EMPTY, "--stdin", input=KEY)
        for agent in (AGENT, EMPTY):
            subprocess.run([LNK, "agent", "send", agent], env=link.env, stdout=subprocess.DEVNULL, check=True)
        tars: list[float] = []
        moves: list[float] = []
        receipts: list[float] = []
        empties: list[float] = []
        for run in range(args.runs):
            anchor = link.root / f"tar-{run}"
            tars.append(tar_pipe(home, anchor))
            shutil.rmtree(anchor)
            for agent, times in ((AGENT, moves), (EMPTY, empties)):
                with elsewhere(link) as there:
                    placed, receipt = move(link, there, agent)
                    times.append(placed)
                    if agent == AGENT:
                        receipts.append(receipt)
                    subprocess.run([LNK, "agent", "stop", agent], env=there, capture_output=True, check=False)

    tar_s, move_s, empty_s = statistics.median(tars), statistics.median(moves), statistics.median(empties)
    ratio = tar_s / move_s
    each = "  ".join(f"{t / m:.2f}" for t, m in zip(tars, moves, strict=True))
    print(f"{args.mib} MiB of files, {args.runs} runs, {load()}")
    print(f"tar | tar            {tar_s:7.2f} s  {args.mib / tar_s:7.0f} MiB/s   (anchor)")
    print(f"send | receive       {move_s:7.2f} s  {args.mib / move_s:7.0f} MiB/s   until in place")
    print(f"  until its receipt  {statistics.median(receipts):7.2f} s   (started there, and on the disk)")
    print(f"  an agent, no files {empty_s:7.2f} s   (what every move costs: two lnk commands starting)")
    print(f"speed against tar    {ratio:7.2f}       (goal {GOAL} or more: {'met' if ratio >= GOAL else 'NOT met'})")
    print(f"  run by run         {each}")
    print(
        f"  the files alone    {tar_s / max(move_s - empty_s, 1e-3):7.2f}       (the move less the one without files)"
    )
    table_row(
        f"move, {args.mib} MiB of files",
        f"{move_s:.2f} s",
        f"tar | tar {tar_s:.2f} s",
        f">= {GOAL:.0%} of tar's speed: {ratio:.0%}",
    )


if __name__ == "__main__":
    main()
