"""`lnk agent start` to the first streamed token of `lnk agent chat`, as a person runs them.

    python benchmarks/start.py [--runs 5] [--no-memory]

An agent with Link Harness exists (started and stopped once: its harness installed, its adapter's
answers kept). Each run starts it, and when `lnk agent start` returns runs `lnk agent chat -m hi`
and takes the moment the first byte of its answer arrives; then stops it. The model is the
conformance kit's stand-in provider on the loopback, which answers at once. Goal: 2 s.

Measured in the same run, as anchors: `python -c pass`, and Link Harness started directly (the
command its adapter's `start` answers, on its own, no sandbox) to its first token: what the
system around the harness adds. Each part is printed too: `lnk agent start` alone, chat's first
token after it, a start whose adapter answers weren't kept (a new release), and the sandbox's
own start (`lnk-sandbox run -- true` against bare bubblewrap), whose cost is lnk-sandbox's.
With memory on (Link Memory, the default), the harness's and the whole agent's resident memory.

The two halves run a minute or more apart, and this machine's load can double in between: their
wall times compare only within a half, and across halves the CPU seconds (which the table's rows
carry beside the wall time) are the figure to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from common import AGENT, PYTHON, Link, load, median_of, python_pass, table_row, throwaway_link

from link_conformance.provider import StandInProvider
from link_conformance.running import free_block
from link_plugin import wire
from link_plugin.calls import PluginProgram
from link_plugin.contract import CONTRACT_VERSION, Kind
from link_plugin.harness import AgentFolders, AgentRef, HarnessSettings, ModelRef, Start
from link_plugin.layout import AgentFolder
from lnk_testing.processes import descendants

GOAL_S = 2.0


def start_to_token(link: Link) -> tuple[float, float, float]:
    """(seconds `lnk agent start` took, seconds from its return to chat's first byte of answer, CPU
    seconds every process of the start spent by then: the figure the machine's load doesn't move)."""
    before = _children_cpu()
    started = time.perf_counter()
    link.lnk("agent", "start", AGENT)
    up = time.perf_counter()
    chat = link.popen("agent", "chat", AGENT, "-m", "hi")
    assert chat.stdout is not None
    first = chat.stdout.read(1)
    token = time.perf_counter()
    spent = sum(cpu_seconds(pid) for pid in agent_processes(link))
    rest = chat.stdout.read()
    if chat.wait() != 0 or not (first + rest).strip():
        raise SystemExit(f"lnk agent chat answered {first + rest!r} (exit {chat.returncode})")
    return up - started, token - up, spent + _children_cpu() - before


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cpu_seconds(pid: int) -> float:
    """The CPU a process and its waited-for children spent."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def stop(link: Link) -> None:
    link.lnk("agent", "stop", AGENT)


def harness_directly(runs: int) -> float:
    """Median seconds from starting Link Harness as its adapter says to its first token, no sandbox."""
    times = []
    with StandInProvider() as provider, tempfile.TemporaryDirectory(prefix="lnk-bench-direct-") as root:
        for run in range(runs + 1):
            port = free_block(2)
            folder = AgentFolder(Path(root) / f"agent{run}")
            folder.create()
            home = folder.harness_home("harness")
            home.mkdir(parents=True)
            agent = AgentRef(name="main", id="directagent1", owner="bench@here")
            settings = HarnessSettings(
                contract=CONTRACT_VERSION,
                agent=agent,
                model=ModelRef(name="stand-in", provider="openai", url=provider.url),
                folders=AgentFolders(
                    agent=str(folder.root), home=str(folder.home), chats=str(folder.chats), harness_home=str(home)
                ),
                endpoint_key="direct-key",
            )
            path = home / "settings.json"
            path.write_text(settings.model_dump_json())
            env = {"LNK_SETTINGS": str(path), "LNK_PORT": str(port)}
            start = PluginProgram(str(Path(PYTHON).with_name("lnk-harness"))).ask_as(
                Start, Kind.HARNESS, "start", env=env
            )
            headers = {"Authorization": "Bearer direct-key", wire.AGENT: "main", wire.AGENT_ID: agent.id}
            began = time.perf_counter()
            process = subprocess.Popen(
                start.argv, env={**os.environ, **start.env, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            try:
                asyncio.run(_first_token(f"http://127.0.0.1:{port}/v1/chat/completions", headers))
                if run:  # the first warms the page cache
                    times.append(time.perf_counter() - began)
            finally:
                process.terminate()
                process.wait()
    return statistics.median(times)


async def _first_token(url: str, headers: dict[str, str]) -> None:
    body = {"model": "link", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    headers = {**headers, wire.THREAD: "bench:direct"}
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        while True:
            try:
                async with client.stream("POST", url, headers=headers, json=body) as response:
                    async for line in response.aiter_lines():
                        if '"content": "' in line and '"content": ""' not in line:
                            return
            except httpx.TransportError:
                await asyncio.sleep(0.005)


def sandbox_start(link: Link, runs: int) -> tuple[float, float] | None:
    """(median `lnk-sandbox run -- true`, median bare `bwrap --ro-bind / / true`), where bubblewrap works."""
    if shutil.which("bwrap") is None:
        return None
    bare = ["bwrap", "--ro-bind", "/", "/", "true"]
    if subprocess.run(bare, capture_output=True).returncode != 0:
        return None
    program = str(Path(PYTHON).with_name("lnk-sandbox"))
    boxed = [program, "run", "--agent", AGENT, "--", "true"]
    return (
        median_of(lambda: subprocess.run(boxed, env=link.env, check=True, capture_output=True), runs),
        median_of(lambda: subprocess.run(bare, check=True), runs),
    )


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def agent_processes(link: Link) -> set[int]:
    """The agent's supervisor and everything under it, and the owner's memory engine (started by it)."""
    states = (link.root / "config" / "agents" / ".run").glob("*/state-*.json")
    supervisors = {int(json.loads(p.read_text())["pid"]) for p in states}
    tree = set(descendants(supervisors))
    engines = {
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and "lnk_link_memory engine" in command_of(int(entry.name))
        and str(link.root) in command_of(int(entry.name))
    }
    return tree | set(descendants(engines))


def measure(link: Link, runs: int, label: str, anchor: float, direct: float) -> tuple[float, float]:
    """(median seconds from `lnk agent start` to the first token, median CPU seconds on the way)."""
    link.lnk("agent", "start", AGENT)  # the agent exists, its harness installed, its adapter's answers kept
    stop(link)
    ups, tokens, totals, cpus = [], [], [], []
    for _ in range(runs):
        up, token, cpu = start_to_token(link)
        stop(link)
        ups.append(up)
        tokens.append(token)
        totals.append(up + token)
        cpus.append(cpu)
    total = statistics.median(totals)
    print(f"{label}, median of {runs}:")
    print(f"  lnk agent start -> first token of lnk agent chat  {total:6.2f} s  ({total / GOAL_S:.2f} of the 2 s goal)")
    print(f"    = {total / anchor:.0f} x python -c pass, {total / direct:.2f} x the harness started directly")
    print(f"  lnk agent start alone                             {statistics.median(ups):6.2f} s")
    print(f"  then lnk agent chat to its first token            {statistics.median(tokens):6.2f} s")
    print(f"  CPU of every process on the way (any load)        {statistics.median(cpus):6.2f} s")
    return total, statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-memory", action="store_true", help="Measure only the agent without memory.")
    args = parser.parse_args()
    print(load())
    anchor = python_pass()
    direct = harness_directly(args.runs)
    print(f"python -c pass: {anchor * 1000:.0f} ms; Link Harness started directly to its first token: {direct:.2f} s")
    with throwaway_link() as link:
        total, cpu = measure(link, args.runs, "an agent without memory, in its sandbox", anchor, direct)
        shutil.rmtree(link.root / "config" / "cache", ignore_errors=True)  # as after a new release
        up, token, _ = start_to_token(link)
        stop(link)
        print(f"  a start asking its adapter again (a new release)  {up + token:6.2f} s")
        sandbox = sandbox_start(link, 20)
        if sandbox is not None:
            boxed, bare = sandbox
            print(
                f"  lnk-sandbox run -- true (lnk-sandbox's own start) {boxed:6.2f} s  (bare bwrap {bare * 1000:.0f} ms)"
            )
        table_row(
            "`lnk agent start` -> first streamed token of `lnk agent chat` (agent exists)",
            f"{total:.2f} s ({cpu:.2f} s of CPU)",
            f"{total / anchor:.0f}x `python -c pass` ({anchor * 1000:.0f} ms); "
            f"{total / direct:.2f}x the harness started directly ({direct:.2f} s)",
            "<= 2 s",
        )
        if args.no_memory:
            return
        link.lnk("agent", "memory", "start", "link", AGENT)
        memory, memory_cpu = measure(link, args.runs, "the same agent with memory on (Link Memory)", anchor, direct)
        link.lnk("agent", "start", AGENT)
        chat = link.lnk("agent", "chat", AGENT, "-m", "what do you remember?")
        assert chat.stdout.strip()
        time.sleep(5)  # its tools listed, the engine indexing an empty folder
        pids = agent_processes(link)
        harness = [pid for pid in pids if command_of(pid).split()[1:3] == ["-m", "lnk_harness.serve"]]
        whole = sum(rss_mib(pid) for pid in pids)
        harness_mib = sum(rss_mib(pid) for pid in harness)
        print(
            f"  resident: the harness {harness_mib:.0f} MiB, the whole agent {whole:.0f} MiB in {len(pids)} processes"
        )
        for pid in sorted(pids, key=rss_mib, reverse=True)[:8]:
            print(f"    {rss_mib(pid):6.1f} MiB  {command_of(pid)[:110]}")
        stop(link)
        table_row(
            "whole agent (supervisor + harness + sandbox wrappers + memory engine + session), RSS",
            f"{whole:.0f} MiB",
            f"the harness {harness_mib:.0f} MiB of it; start to first token with memory {memory:.2f} s "
            f"({memory_cpu:.2f} s of CPU; the two starts are measured minutes apart, their CPU compares)",
            "<= 250 MiB",
        )
    print(load())


if __name__ == "__main__":
    sys.exit(main())
