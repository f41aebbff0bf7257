"""Link Harness's figures, measured in one run against the conformance kit's stand-in provider.

    python benchmarks/figures.py [--turns 200]

1. Added latency per turn: time to first token through the harness minus straight to the
   stand-in provider, p50 over the turns (target: at most 5 ms). Measured with a client that
   keeps its connection (as an OpenAI client does), and with the bridge's own client, which
   opens a connection per message and proves the endpoint first.
2. Time from process start to first answer (target: at most 2 s), without tools and with one
   MCP tool to list.
3. Idle RSS of one agent's process, after it answered.
4. RSS of one process answering for 10 agents, after each answered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from link_conformance.running import free_block, wait_for_port
from link_plugin import wire
from link_plugin.channel import EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.endpoint import EndpointClient
from link_plugin.harness import AgentFolders, AgentRef, HarnessSettings, ModelRef
from link_plugin.layout import AgentFolder

STAND_INS = """
import json, sys
from link_conformance.provider import StandInProvider
from link_conformance.tools import StandInTools
with StandInProvider() as provider, StandInTools(("memory",)) as tools:
    print(json.dumps({"model": provider.url, "tools": tools.addresses}), flush=True)
    sys.stdin.read()
"""
"""The stand-in provider and a stand-in tool, in a process of their own so no client shares their GIL."""


@dataclass
class StandIns:
    model: str
    tools: dict[str, str]


@contextmanager
def stand_ins() -> Iterator[StandIns]:
    process = subprocess.Popen([sys.executable, "-c", STAND_INS], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdin is not None
    started = json.loads(process.stdout.readline())
    try:
        yield StandIns(started["model"], started["tools"])
    finally:
        process.stdin.close()
        process.wait()


LATENCY_TARGET_MS = 5.0
START_TARGET_S = 2.0
BODY = {"model": "link", "stream": True}


def agent_settings(root: Path, number: int, model_url: str, tools: dict[str, str] | None = None) -> Path:
    agent = AgentRef(name="main", id=f"benchagent{number:02d}", owner=f"owner{number}@bench")
    folder = AgentFolder(root / f"agent{number}")
    folder.create()
    home = folder.harness_home("harness")
    home.mkdir(parents=True, exist_ok=True)
    settings = HarnessSettings(
        contract=CONTRACT_VERSION,
        agent=agent,
        model=ModelRef(name="stand-in", provider="openai", url=model_url),
        folders=AgentFolders(
            agent=str(folder.root), home=str(folder.home), chats=str(folder.chats), harness_home=str(home)
        ),
        endpoint_key=f"bench-key-{number}",
        tools=tools or {},
    )
    path = home / "settings.json"
    path.write_text(settings.model_dump_json())
    return path


def serve(files: list[Path], port: int) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "lnk_harness", "serve", *[a for f in files[1:] for a in ("--settings", str(f))]]
    env = {**os.environ, "LNK_SETTINGS": str(files[0]), "LNK_PORT": str(port)}
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def headers(number: int, thread: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer bench-key-{number}",
        wire.AGENT: "main",
        wire.AGENT_ID: f"benchagent{number:02d}",
        wire.THREAD: thread,
    }


async def first_token(
    client: httpx.AsyncClient, url: str, head: dict[str, str], text: str, before: Sequence[object] = ()
) -> float:
    """Seconds to the first content delta, reading the rest of the answer after (`before`: messages
    sent ahead of this one, as a conversation's window is)."""
    body = {**BODY, "messages": [*before, {"role": "user", "content": text}]}
    started = time.perf_counter()
    first = 0.0
    async with client.stream("POST", url, headers=head, json=body) as response:
        async for line in response.aiter_lines():
            if not first and '"content": "' in line and '"content": ""' not in line:
                first = time.perf_counter() - started
    return first


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def latency(provider: StandIns, root: Path, turns: int) -> dict[str, float]:
    """Turns in 20 conversations, each straight to the provider and then through the harness."""
    port = free_block(2)
    process = serve([agent_settings(root, 0, provider.model)], port)
    direct = f"{provider.model}/chat/completions"
    endpoint = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        wait_for_port(port, 30, process)
        straight, through, added, bridged, one = [], [], [], [], []
        async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
            for warm in range(5):
                await first_token(client, endpoint, headers(0, "bench:warm"), f"warm {warm}")
                await first_token(client, direct, {}, "warm")
            cpu = cpu_seconds(process.pid)
            for turn in range(turns):
                straight.append(await first_token(client, direct, {}, f"turn {turn}"))
                through.append(await first_token(client, endpoint, headers(0, f"bench:{turn % 20}"), f"turn {turn}"))
                added.append(through[-1] - straight[-1])
            cpu = cpu_seconds(process.pid) - cpu
            for turn in range(turns):
                one.append(await first_token(client, endpoint, headers(0, "bench:one"), f"turn {turn}"))
        bridge = EndpointClient(
            EndpointRef(url=f"http://127.0.0.1:{port}/v1", key="bench-key-0"),
            AgentRef(name="main", id="benchagent00", owner="owner0@bench"),
        )
        for turn in range(turns // 4):
            started = time.perf_counter()
            async with bridge.chat(f"bridged {turn}", wire.Thread(channel="bridge", chat="one")) as reply:
                async for _ in reply.deltas():
                    bridged.append(time.perf_counter() - started)
                    break
                await reply.text()
        return {
            "straight": p50_ms(straight),
            "through": p50_ms(through),
            "added": p50_ms(added),
            "cpu": cpu / turns * 1000,
            "bridged": p50_ms(bridged),
            "long": p50_ms(one[-20:]),
        }
    finally:
        process.terminate()
        process.wait()


async def start_to_answer(provider: StandIns, root: Path, tools: dict[str, str], runs: int = 5) -> float:
    times = []
    for run in range(runs):
        port = free_block(2)
        files = [agent_settings(root / f"start{run}{len(tools)}", 0, provider.model, tools)]
        started = time.perf_counter()
        process = serve(files, port)
        try:
            async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
                while True:
                    try:
                        await first_token(
                            client, f"http://127.0.0.1:{port}/v1/chat/completions", headers(0, "bench:start"), "hi"
                        )
                        break
                    except httpx.TransportError:
                        await asyncio.sleep(0.005)
            times.append(time.perf_counter() - started)
        finally:
            process.terminate()
            process.wait()
    return statistics.median(times)


def bare_start(runs: int = 5) -> float:
    """The anchor of a start: an interpreter that does nothing (`python -c pass`), median of `runs`."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def memory(provider: StandIns, root: Path) -> tuple[int, int, int]:
    """(idle RSS of one agent's process before any turn, after one, RSS of a process with 10 agents) in KiB."""
    port = free_block(2)
    process = serve([agent_settings(root / "one", 0, provider.model)], port)
    try:
        wait_for_port(port, 30, process)
        await asyncio.sleep(0.5)
        fresh = rss_kib(process.pid)
        async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
            await first_token(client, f"http://127.0.0.1:{port}/v1/chat/completions", headers(0, "bench:idle"), "hi")
        await asyncio.sleep(0.5)
        idle = rss_kib(process.pid)
    finally:
        process.terminate()
        process.wait()
    port = free_block(2)
    files = [agent_settings(root / "ten", number, provider.model) for number in range(10)]
    process = serve(files, port)
    try:
        wait_for_port(port, 30, process)
        async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
            for number in range(10):
                url = f"http://127.0.0.1:{port}/v1/chat/completions"
                await first_token(client, url, headers(number, "bench:ten"), "hi")
        await asyncio.sleep(0.5)
        ten = rss_kib(process.pid)
    finally:
        process.terminate()
        process.wait()
    return fresh, idle, ten


def row(label: str, value: float, unit: str, target: float | None = None) -> None:
    against = f"  ({value / target:.2f} of the {target:g} {unit} target)" if target else ""
    print(f"  {label:<44}{value:9.2f} {unit}{against}")


async def main(turns: int) -> None:
    print(f"load average at the start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="lnk-harness-bench-") as folder, stand_ins() as provider:
        root = Path(folder)
        figures = await latency(provider, root, turns)
        print(f"time to first token, p50 over {turns} turns in 20 conversations:")
        row("straight to the stand-in provider", figures["straight"], "ms")
        row("through the harness", figures["through"], "ms")
        row("added by the harness (p50 of each pair)", figures["added"], "ms", LATENCY_TARGET_MS)
        row("the harness's CPU time per whole turn", figures["cpu"], "ms")
        row(f"through the harness, turns {turns - 19}-{turns} of one conversation", figures["long"], "ms")
        row("the bridge's client (a connection + proof each)", figures["bridged"], "ms")
        print("process start to first answer, median of 5:")
        bare = bare_start()
        alone = await start_to_answer(provider, root / "bare", {})
        tooled = await start_to_answer(provider, root / "tooled", provider.tools)
        bare = (bare + bare_start()) / 2  # before and after: the load moves while they run
        row("`python -c pass` (the anchor)", bare, "s")
        row("no tools", alone, "s", START_TARGET_S)
        row("one MCP tool to list first", tooled, "s", START_TARGET_S)
        print(f"  {alone / bare:.1f}x and {tooled / bare:.1f}x the anchor")
        fresh, idle, ten = await memory(provider, root)
        print("resident memory:")
        row("one agent, started", fresh / 1024, "MiB")
        row("one agent, idle after answering", idle / 1024, "MiB")
        row("ten agents in one process, each answered", ten / 1024, "MiB")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    asyncio.run(main(parser.parse_args().turns))
