"""`lnk agent chat -m hi` on a running agent: the whole round trip, as a person waits for it.

    python benchmarks/chat.py [--messages 20]

The agent runs in its sandbox with Link Harness; the model is the conformance kit's stand-in on
the loopback, which answers at once. Goal: 300 ms, and no 40 ms step anywhere on the path (a
write held by Nagle until the delayed ACK of the one before).

Measured in the same run, as anchors: `python -c pass`, and the same message sent by a client
already running (the bridge's own EndpointClient: a connection, the proof, the message, the
answer), whose spread shows any 40 ms stall: each of its round trips is printed by tens of ms.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from collections import Counter

from common import AGENT, Link, load, python_pass, seconds, table_row, throwaway_link

from link_plugin.endpoint import EndpointClient
from link_plugin.harness import AgentRef
from link_plugin.layout import Layout
from link_plugin.wire import Thread
from lnk.agents import load_agent
from lnk.runstate import read_spec

GOAL_MS = 300.0


def chat_once(link: Link) -> float:
    def run() -> None:
        done = link.lnk("agent", "chat", AGENT, "-m", "hi")
        assert done.stdout.strip(), done.stderr

    return seconds(run)


def chat_cpu(link: Link) -> float:
    """The CPU seconds one `lnk agent chat -m hi` process spends: what the machine's load doesn't move."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    chat_once(link)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


async def in_process(link: Link, messages: int) -> list[float]:
    """Round trips of one message each through EndpointClient, as a bridge sends them."""
    agent = load_agent(Layout(config=link.root / "config", agents=link.root / "agents"), AGENT)
    spec = read_spec(agent)
    assert spec is not None and spec.endpoint is not None
    client = EndpointClient(spec.endpoint, AgentRef(name=agent.name, id=agent.id, owner=agent.settings.owner))
    took = []
    for number in range(messages + 3):
        started = time.perf_counter()
        async with client.chat(f"hi {number}", Thread(channel="bench", chat="endpoint")) as reply:
            await reply.text()
        if number >= 3:
            took.append(time.perf_counter() - started)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20)
    args = parser.parse_args()
    print(load())
    anchor = python_pass()
    with throwaway_link() as link:
        link.lnk("agent", "start", AGENT)
        for _ in range(3):
            chat_once(link)
        whole = statistics.median(chat_once(link) for _ in range(args.messages))
        cpu = statistics.median(chat_cpu(link) for _ in range(5))
        direct = asyncio.run(in_process(link, args.messages * 2))
    endpoint = statistics.median(direct)
    steps = Counter(int(t * 1000) // 10 * 10 for t in direct)
    stalls = sum(1 for t in direct if t >= 0.040)
    p90, worst = sorted(direct)[int(len(direct) * 0.9)], max(direct)
    print(f"lnk agent chat -m hi on a running agent, median of {args.messages}:")
    print(f"  the whole round trip               {whole * 1000:7.1f} ms  ({whole * 1000 / GOAL_MS:.2f} of the goal)")
    print(f"    = {whole / anchor:.1f} x python -c pass ({anchor * 1000:.0f} ms)")
    print(f"  CPU of the lnk agent chat process    {cpu * 1000:7.1f} ms  (any load)")
    print(f"  the endpoint's round trip, in process  {endpoint * 1000:5.1f} ms", end="")
    print(f"  (p90 {p90 * 1000:.1f}, max {worst * 1000:.1f})")
    print(f"    by tens of ms: {', '.join(f'{ms}-{ms + 9} ms: {n}' for ms, n in sorted(steps.items()))}")
    print(f"    round trips of 40 ms or more: {stalls} of {len(direct)}")
    table_row(
        "`lnk agent chat -m hi` round trip on a running agent",
        f"{whole * 1000:.0f} ms; {stalls} of {len(direct)} endpoint round trips >= 40 ms",
        f"{whole / anchor:.1f}x `python -c pass` ({anchor * 1000:.0f} ms); "
        f"the endpoint's own round trip {endpoint * 1000:.1f} ms",
        "<= 300 ms, no 40 ms stalls",
    )
    print(load())


if __name__ == "__main__":
    sys.exit(main())
