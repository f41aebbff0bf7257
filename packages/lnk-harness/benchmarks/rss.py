"""Link Harness's resident memory with the memory tool on, as Link runs it.

    python benchmarks/rss.py

The harness runs as its adapter's `start` says (`python -m lnk_harness.serve`), for one agent
whose memory tool (`$LNK_MEMORY`) is the conformance kit's stand-in MCP server, and its model the
kit's stand-in provider. Its RSS is read after it started (before its first message; a harness with
tools loads the MCP client and lists its tools as it starts), after its first answers, and after a
call to the memory tool. Goal: 60 MiB.
Anchors in the same run: a bare interpreter (`python -c`), and the same harness with no tool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from figures import agent_settings, headers, rss_kib

from link_conformance.provider import Reply, StandInProvider, ToolCall
from link_conformance.running import free_block, wait_for_port
from link_conformance.tools import StandInTools
from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.harness import Start

GOAL_MIB = 60.0
SETTLE = 1.0
"""Seconds after an answer before reading RSS: what the answer started (a listing) has finished."""


def bare_interpreter_mib() -> float:
    done = subprocess.run(
        [sys.executable, "-c", "print(open('/proc/self/status').read())"], capture_output=True, text=True, check=True
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


SDK = """
import sys
from link_plugin.lean import skip_httpx_cli
skip_httpx_cli()
import uvicorn
from lnk_harness import agents, model, server, serve

def mib():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")) / 1024

before = mib()
import mcp_types
types = mib()
import mcp
print(before, types, mib(), sum(1 for name in sys.modules if name.startswith("mcp.server")))
"""
"""What the MCP SDK adds to a process that already holds what the harness imports to answer."""


def sdk_mib() -> tuple[float, float, int]:
    """(its protocol types, the rest of `import mcp`, how many of its server's modules that loads)."""
    done = subprocess.run([sys.executable, "-c", SDK], capture_output=True, text=True, check=True)
    before, types, whole, server = done.stdout.split()
    return float(types) - float(before), float(whole) - float(types), int(server)


def start(settings: Path, port: int, memory: str | None) -> subprocess.Popen[bytes]:
    env = {"LNK_SETTINGS": str(settings), "LNK_PORT": str(port)}
    if memory:
        env["LNK_MEMORY"] = memory
    adapter = PluginProgram(str(Path(sys.executable).with_name("lnk-harness")))
    argv = adapter.ask_as(Start, Kind.HARNESS, "start", env=env).argv
    return subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def say(port: int, text: str, thread: str = "bench:rss") -> dict[str, object]:
    """One message; the last request the model got."""
    body = {"model": "link", "stream": False, "messages": [{"role": "user", "content": text}]}
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    response = httpx.post(url, json=body, headers=headers(0, thread), timeout=60, trust_env=False)
    response.raise_for_status()
    return dict(response.json())


def tools_listed(port: int, provider: StandInProvider) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        say(port, "are your tools there?", "bench:listing")
        if provider.requests[-1].json.get("tools"):
            return
        time.sleep(0.1)
    raise SystemExit("the harness never offered its tools")


def mib(pid: int) -> float:
    time.sleep(SETTLE)
    return rss_kib(pid) / 1024


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    bare = bare_interpreter_mib()
    with (
        tempfile.TemporaryDirectory(prefix="lnk-harness-rss-") as root,
        StandInProvider() as provider,
        StandInTools(("memory",)) as tools,
    ):
        port = free_block(2)
        process = start(agent_settings(Path(root) / "none", 0, provider.url), port, None)
        try:
            wait_for_port(port, 30, process)
            say(port, "hi")
            without = mib(process.pid)
        finally:
            process.terminate()
            process.wait()

        port = free_block(2)
        process = start(agent_settings(Path(root) / "memory", 0, provider.url), port, tools.addresses["memory"])
        try:
            wait_for_port(port, 30, process)
            started = mib(process.pid)
            tools_listed(port, provider)
            listed = mib(process.pid)
            provider.script(Reply(tool_calls=[ToolCall(StandInTools.tool_of("memory"), {"text": "x"})]), Reply("ok"))
            say(port, "search your memory")
            called = mib(process.pid)
        finally:
            process.terminate()
            process.wait()
    types, rest, server_modules = sdk_mib()
    rows = [
        ("a bare interpreter (python -c)", bare, ""),
        ("no tool, after answering", without, f"{without / bare:.1f}x the interpreter"),
        ("memory tool on, before its first message", started, ""),
        ("memory tool on, its tools listed", listed, f"the MCP client: +{listed - without:.1f} MiB"),
        ("memory tool on, after a call to it", called, f"{called / GOAL_MIB:.2f} of the 60 MiB goal"),
    ]
    print("Link Harness's resident memory (RSS), one agent:")
    for label, value, note in rows:
        print(f"  {label:<46} {value:6.1f} MiB" + (f"  ({note})" if note else ""))
    print("what the MCP SDK adds, imported beside what the harness imports to answer:")
    print(f"  {'mcp_types (its protocol types, two versions)':<46} {types:6.1f} MiB")
    print(f"  {'the rest of import mcp':<46} {rest:6.1f} MiB  ({server_modules} modules of its server among them)")
    row = {
        "row": "harness RSS in a real agent (memory tool on)",
        "figure": f"{called:.0f} MiB after a memory call; {started:.0f} MiB before its first message",
        "anchor": f"{called / bare:.1f}x a bare interpreter ({bare:.0f} MiB); {without:.0f} MiB with no tool",
        "goal": "<= 60 MiB",
    }
    print("table-row " + json.dumps(row), flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
