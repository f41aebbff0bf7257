"""What Link's seccomp filter adds to a sandbox's start: the same sandbox with and without it, side by side.

    python benchmarks/seccomp_filter.py [runs]

Target: at most 2 ms added. Both run bubblewrap with the agent's whole policy (its folders by
descriptor, the relay first inside), the one with `--seccomp` and the other without, taking turns
so that load on the machine falls on both alike. Printed, as wall-clock time and as CPU time
(bubblewrap and everything under it; what the filter costs is CPU, and CPU time hardly moves
with the machine's load): the medians, the median of the pairs' differences, and the same for
`python3 -c pass` (a program making a few hundred system calls through the filter).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time

from common import throwaway_link
from lnk_sandbox import bwrap, seccomp
from lnk_sandbox.policy import compiled
from lnk_sandbox.runner import Sandbox

from link_plugin.sandbox import SandboxRequest

TARGET_MS = 2.0


def memory_file(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def cpu_ms() -> float:
    """CPU time (user and system) of every child process ended so far, bubblewrap's own included."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def started(sandbox: Sandbox, filtered: bool) -> tuple[float, float]:
    """One sandbox of the policy run to its end, with or without the filter: ms of wall clock and of CPU."""
    with sandbox.policy() as policy:
        relay = memory_file("lnk-relay", compiled("relay"))
        program = memory_file("lnk-seccomp", seccomp.program())
        plumbing = bwrap.Plumbing(relay_fd=relay, seccomp_fd=program)
        options = bwrap.options(policy, plumbing)
        if not filtered:
            options = options[:-2]  # the filter is the options' last pair
            assert "--seccomp" not in options
        begun, cpu = time.perf_counter(), cpu_ms()
        subprocess.run(
            [bwrap.bwrap(), *options, "--", *bwrap.command(policy, plumbing)],
            pass_fds=[relay, program, *policy.fds()],
            check=True,
        )
        took = (time.perf_counter() - begun) * 1000, cpu_ms() - cpu
        os.close(relay)
        os.close(program)
    return took


def side_by_side(sandbox: Sandbox, times: int) -> dict[str, tuple[float, float, float]]:
    """For wall clock and CPU: the medians with and without, and the median of each pair's
    difference (turns alternate who goes first)."""
    started(sandbox, True)
    started(sandbox, False)
    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for turn in range(times):
        for filtered in (True, False) if turn % 2 else (False, True):
            runs[filtered].append(started(sandbox, filtered))
    found = {}
    for index, name in enumerate(("wall", "cpu")):
        with_filter = [run[index] for run in runs[True]]
        without = [run[index] for run in runs[False]]
        added = statistics.median(a - b for a, b in zip(with_filter, without, strict=True))
        found[name] = (statistics.median(with_filter), statistics.median(without), added)
    return found


def main() -> None:
    times = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    with throwaway_link() as layout:
        env = dict(os.environ)
        for name, argv in (("true", ["true"]), ("python3 -c pass", ["python3", "-c", "pass"])):
            request = SandboxRequest(agent="bench", harness="mini", argv=argv, mode="health")
            found = side_by_side(Sandbox(request, layout, environ=env), times)
            for clock, (filtered, bare, added) in found.items():
                print(f"{name + f', {clock}, without the filter:':42} {bare:7.2f} ms")
                print(
                    f"{name + f', {clock}, with it:':42} {filtered:7.2f} ms  ({added:+.2f} ms, "
                    f"{added / TARGET_MS:.2f} of the 2 ms target)"
                )


if __name__ == "__main__":
    main()
