"""How long `true` takes under the full policy (bubblewrap, the proxy, the relays) against bare `true`.

    python benchmarks/startup.py [runs]

Target: at most 150 ms added. Printed: the median of each, what the sandbox adds, and that as a
share of the target. `in process` is what a long-lived caller pays (the policy, its folders each
opened by descriptor, the proxy started and stopped, bubblewrap, the seccomp filter and the
relay); `lnk-sandbox run` adds starting the CLI itself. `the policy alone` is the part of that
spent opening and checking the folders.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from common import throwaway_link
from lnk_sandbox.runner import Sandbox

from link_plugin.layout import ENV_AGENTS, ENV_CONFIG
from link_plugin.sandbox import SandboxRequest

TARGET_MS = 150.0


def median_ms(run: Callable[[], object], times: int) -> float:
    run()
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    times = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    program = str(Path(sys.executable).with_name("lnk-sandbox"))
    with throwaway_link() as layout:
        env = {**os.environ, ENV_CONFIG: str(layout.config), ENV_AGENTS: str(layout.agents)}
        request = SandboxRequest(agent="bench", harness="mini", argv=["true"])

        def in_process() -> None:
            assert Sandbox(request, layout, environ=env).run() == 0

        def policy_alone() -> None:
            with Sandbox(request, layout, environ=env).policy():
                pass

        bare = median_ms(lambda: subprocess.run(["true"], check=True), times)
        policy = median_ms(policy_alone, times)
        sandboxed = median_ms(in_process, times)
        command = [program, "run", "--agent", "bench", "--", "true"]
        cli = median_ms(lambda: subprocess.run(command, env=env, check=True), times)
    print(f"bare true:                 {bare:7.1f} ms")
    print(f"the policy alone:          {policy:7.1f} ms  (its folders opened and checked)")
    for name, value in (("full policy, in process:", sandboxed), ("lnk-sandbox run -- true:", cli)):
        added = value - bare
        print(f"{name:26} {value:7.1f} ms  (+{added:.1f} ms, {added / TARGET_MS:.2f} of the 150 ms target)")


if __name__ == "__main__":
    main()
