"""Run a command and write how much CPU it took: its own, and that of every process it started,
even those that left it.

Tests start agents that detach (`lnk agent start` forks twice, as it does for a person), so their
time never reaches the command's own `wait`, and `time` would leave it out. Run as a child
subreaper (Linux's PR_SET_CHILD_SUBREAPER), this process becomes the parent of each such orphan and
waits for it, so the kernel's count of its children's time holds them all. A process still running
`GRACE` seconds after the command ended is counted as one left behind, not waited for.

python scripts/cpu_time.py OUT COMMAND...    # OUT gets {"user": s, "system": s, "left": n}
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

GRACE = 30.0
PR_SET_CHILD_SUBREAPER = 36


def _adopt_orphans() -> None:
    """Be the parent of every orphan below this process; elsewhere than Linux, count what it can."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap(command: subprocess.Popen[bytes]) -> tuple[int, int]:
    """Wait for the command, then for the orphans it left: its exit code, and how many still run."""
    code = command.wait()
    deadline = time.monotonic() + GRACE
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code, 0
        if pid:
            continue
        if time.monotonic() > deadline:
            return code, len(_children())
        time.sleep(0.1)


def _children() -> list[int]:
    """This process's children still running (those it adopted included)."""
    mine = str(os.getpid())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == mine:
            found.append(int(stat.parent.name))
    return found


def main(argv: list[str]) -> int:
    out, command = Path(argv[0]), argv[1:]
    _adopt_orphans()
    started = subprocess.Popen(command)
    # After the start, or the command would inherit it: Ctrl-C is the command's to handle, then count.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code, left = _reap(started)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    out.write_text(json.dumps({"user": round(used.ru_utime, 1), "system": round(used.ru_stime, 1), "left": left}))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
