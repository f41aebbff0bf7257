"""What a sandbox adds to a start: `lnk-sandbox run --request FILE` running `true`, as the core runs it,
against bare bubblewrap, in the same run.

    python benchmarks/startup.py [rounds]

The request is the harness's whole policy, as `lnk agent start` writes it: its folders (each
opened by descriptor), its proxy and the relays (the proxy's port, a published port, a local
model's), the seccomp filter. In each round every command runs once, in turn, so a change in the
machine's load moves them all; printed are the medians of wall clock and of CPU (user + system
of the whole process tree), what `run` adds over bare `bwrap --ro-bind / / true`, and the ratio.
`python -c pass` is the anchor for what any Python program pays to start, and `python -I -S -c pass`
for the relay's own start (`relay.pyc -- true`: the relay, outside a sandbox, starting `true`
with nothing to relay), the sandbox's first process, which is Python too; and `run`'s own imports
alone, against `python -c pass`, so what is left of a run is its work. The machine is shared:
its load (`uptime`) is printed first, and where load stretches wall clock CPU time says more.

Also measured: a run whose command asks its proxy once (the proxy is loaded by the first
connection), `lnk-sandbox grants --json` (asked before a start), the policy alone (its folders
opened and checked, in process), and the modules `run --request` imports (`python -X importtime`).

Programs run as installed: their bytecode compiled (as pip does at install), here into a folder of
the benchmark's own (`PYTHONPYCACHEPREFIX`), written by a first round that isn't counted.

Target: at most 30 ms added.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import throwaway_link
from lnk_sandbox.policy import compiled, interpreter
from lnk_sandbox.request import Request
from lnk_sandbox.runner import Sandbox

from link_plugin.layout import ENV_AGENTS, ENV_CONFIG
from link_plugin.sandbox import SandboxRequest

TARGET_MS = 30.0
ROW = "`lnk-sandbox run -- true`, added over bare `bwrap --ro-bind / / true`"
RUN_PATH = ("lnk_sandbox.entry", "link_plugin.layout", "lnk_sandbox.runner")
"""What `run --request` imports before its work (`entry._run`)."""
HEAVY = ("typer", "pydantic", "asyncio", "h11", "ssl", "lnk_sandbox.cli", "lnk_sandbox.proxy")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall clock and CPU (the whole process tree's) of one run, in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({done.returncode}): {done.stderr.decode()}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall * 1000, cpu * 1000


def in_process_ms(run: Callable[[], object], times: int) -> float:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def imports(command: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", *command], env=env, capture_output=True, text=True)
    return [line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    print(f"load: {Path('/proc/loadavg').read_text().split()[:3]} (1, 5, 15 min) on {os.cpu_count()} cores")
    program = str(Path(sys.executable).with_name("lnk-sandbox"))
    with throwaway_link() as layout, tempfile.TemporaryDirectory(prefix="lnk-bench-pyc-") as bytecode:
        env = {**os.environ, ENV_CONFIG: str(layout.config), ENV_AGENTS: str(layout.agents)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = bytecode
        home = layout.agent("bench").home
        request = SandboxRequest(
            agent="bench", harness="mini", argv=["true"], writes=[str(home)], ports=[18890], model_port=18891
        )
        asked = request.model_copy(update={"argv": ["curl", "-s", "-o", "/dev/null", "http://127.0.0.1:3128/"]})
        relay = Path(bytecode) / "relay.pyc"
        relay.write_bytes(compiled("relay"))
        files = {}
        for name, each in (("true", request), ("proxy", asked)):
            files[name] = layout.config / f"request-{name}.json"
            files[name].write_text(each.to_json())
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "bwrap --ro-bind / / true": ["bwrap", "--ro-bind", "/", "/", "true"],
            "python -I -S -c pass": [interpreter(), "-I", "-S", "-c", "pass"],
            "the relay alone: relay.pyc -- true": [interpreter(), "-I", "-S", str(relay), "--", "true"],
            "run's imports alone": [sys.executable, "-c", f"import {', '.join(RUN_PATH)}"],
            "lnk-sandbox run -- true": [program, "run", "--request", str(files["true"])],
            "run, asking its proxy once": [program, "run", "--request", str(files["proxy"])],
            "lnk-sandbox grants --json": [program, "grants", "--agent", "bench", "--harness", "mini", "--json"],
        }
        for command in commands.values():
            timed(command, env)  # bytecode written, grants checked once
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, command in commands.items():
                samples[name].append(timed(command, env))
        fast = Request.of(request)

        def policy_alone() -> None:
            with Sandbox(fast, layout, environ=env).policy():
                pass

        policy = in_process_ms(policy_alone, rounds)
        loaded = imports(commands["lnk-sandbox run -- true"], env)

    wall = {name: statistics.median(s[0] for s in runs) for name, runs in samples.items()}
    cpu = {name: statistics.median(s[1] for s in runs) for name, runs in samples.items()}
    bare = "bwrap --ro-bind / / true"
    print(f"{'':36} {'wall':>9} {'cpu':>9}   (medians of {rounds} rounds)")
    for name in commands:
        line = f"{name:36} {wall[name]:6.1f} ms {cpu[name]:6.1f} ms"
        if name.startswith(("lnk-sandbox run", "run,")):
            line += f"   +{wall[name] - wall[bare]:.1f} ms wall, +{cpu[name] - cpu[bare]:.1f} ms cpu over bare bwrap"
            line += f" ({wall[name] / wall[bare]:.1f}x)"
        if name.startswith("the relay"):
            bare_python = "python -I -S -c pass"
            line += f"   +{cpu[name] - cpu[bare_python]:.1f} ms cpu over {bare_python}"
        if name == "run's imports alone":
            line += f"   +{cpu[name] - cpu['python -c pass']:.1f} ms cpu over python -c pass"
        print(line)
    print(f"{'the policy alone, in process':36} {policy:6.1f} ms            (its folders opened and checked)")
    heavy = [name for name in HEAVY if name in loaded]
    print(f"run --request imports {len(loaded)} modules; of {', '.join(HEAVY)}: {', '.join(heavy) or 'none'}")
    added = wall["lnk-sandbox run -- true"] - wall[bare]
    added_cpu = cpu["lnk-sandbox run -- true"] - cpu[bare]
    print(f"added: {added:.1f} ms wall, {added_cpu:.1f} ms cpu; target {TARGET_MS:.0f} ms")
    anchor = (
        f"bare bwrap {wall[bare]:.1f} ms ({wall['lnk-sandbox run -- true'] / wall[bare]:.1f}x); "
        f"python -c pass {wall['python -c pass']:.1f} ms; cpu +{added_cpu:.1f} ms"
    )
    row = {"row": ROW, "figure": f"+{added:.0f} ms", "anchor": anchor, "goal": f"<= {TARGET_MS:.0f} ms"}
    print("table-row " + json.dumps(row))


if __name__ == "__main__":
    main()
