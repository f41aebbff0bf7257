"""What lnk's gateway and tool bridge add to a call, against the same call made directly.

    python benchmarks/gateway.py [--calls 200]

- model: a chat completion to a stand-in provider, through the gateway (which adds the key) vs
  straight to the provider; p50 of each, and the ratio.
- tool: an MCP tool call through the tool bridge (MCP over HTTP, passed on to the tool's stdio
  server) vs straight to the stdio server, and vs an MCP server of the SDK's own serving a tool
  over HTTP (what any tool over HTTP costs); p50 of each, and the ratios; and a call the server
  doesn't mark as only reading, before which the bridge makes sure its server still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from mcp import Client, StdioServerParameters

from link_conformance import StandInProvider, StandInTools
from link_plugin.keys import KeyStore
from link_plugin.providers import PROVIDERS
from lnk.approvals import Approvals
from lnk.gateway import Gateway, Listener, ModelRelay, loopback_socket
from lnk.toolbridge import CallLog, ToolBridge
from lnk.tooldefs import ToolDef
from lnk_testing import tool_server

TOOL = Path(tool_server.__file__)
KEY = "sk-bench"


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def model_calls(url: str, calls: int, headers: dict[str, str]) -> list[float]:
    body = {"model": "gpt-6-luna", "messages": [{"role": "user", "content": "hi"}]}
    took = []
    async with httpx.AsyncClient() as client:
        for _ in range(calls):
            started = time.perf_counter()
            (await client.post(f"{url}/chat/completions", json=body, headers=headers)).raise_for_status()
            took.append(time.perf_counter() - started)
    return took


async def tool_calls(client: Client, calls: int, name: str = "lookup") -> list[float]:
    took = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.call_tool(name, {"word": "cat"} if name in ("lookup", "erase") else {"text": "cat"})
        took.append(time.perf_counter() - started)
    return took


async def main(calls: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="lnk-bench-"))
    os.environ["TOOL_RECORD"] = str(folder / "calls")
    with StandInProvider(key=KEY) as provider:
        os.environ["LNK_UPSTREAM_OPENAI"] = provider.origin
        keys = KeyStore(folder / "keys.json")
        keys.set("openai", KEY)
        target = StdioServerParameters(command=sys.executable, args=[str(TOOL)], env=dict(os.environ))
        tool = ToolDef(name="words", argv=[sys.executable, str(TOOL)], no_ask=["lookup", "erase"])
        bridge = ToolBridge([tool], Approvals(), CallLog(folder / "tools.log"), lambda _: target)
        relay = ModelRelay(PROVIDERS["openai"], keys)
        sock = loopback_socket(0)
        port = sock.getsockname()[1]
        listener = Listener(Gateway(bridge, "secret", relay), sock)
        async with bridge.running():
            served = asyncio.create_task(listener.serve())
            while not listener.server.started:
                await asyncio.sleep(0.01)
            gateway = f"http://127.0.0.1:{port}/secret"
            await model_calls(provider.url, 10, {"Authorization": f"Bearer {KEY}"})
            direct = await model_calls(provider.url, calls, {"Authorization": f"Bearer {KEY}"})
            await model_calls(f"{gateway}/model/v1", 10, {})
            through = await model_calls(f"{gateway}/model/v1", calls, {})
            print(f"model call p50: direct {p50(direct):.2f} ms, through the gateway {p50(through):.2f} ms")
            print(f"  ratio {p50(through) / p50(direct):.2f}x, added {p50(through) - p50(direct):.2f} ms")

            async with Client(target) as client:
                await tool_calls(client, 10)
                direct = await tool_calls(client, calls)
            async with Client(f"{gateway}/_link/tools/words/mcp") as client:
                await tool_calls(client, 10)
                through = await tool_calls(client, calls)
                changing = await tool_calls(client, calls, "erase")
            with StandInTools(("plain",)) as plain:
                async with Client(plain.addresses["plain"]) as client:
                    await tool_calls(client, 10, "plain_ping")
                    http = await tool_calls(client, calls, "plain_ping")
            print(f"tool call p50: direct (stdio) {p50(direct):.2f} ms, an SDK server over HTTP {p50(http):.2f} ms,")
            print(f"  through the bridge (HTTP, then stdio) {p50(through):.2f} ms")
            print(f"  ratio to stdio {p50(through) / p50(direct):.2f}x, to HTTP {p50(through) / p50(http):.2f}x")
            print(f"  a call that may change something (the server's liveness asked first): {p50(changing):.2f} ms")
            listener.stop()
            await served
        await relay.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    asyncio.run(main(parser.parse_args().calls))
