"""What a channel's bridge adds to each message over calling the harness's endpoint directly, for
the channels' benchmarks.

    compare("Slack", f"slack:{OWNER.dm}", lambda spec: SlackBridge(spec).run, section, secrets,
            send=lambda text: slack.dm(OWNER, text), texts=lambda: slack.texts(OWNER.dm), runs=100)

or, piece by piece:

    direct = straight(harness.ref, "slack:D1", runs)             # the anchor: the endpoint alone
    bridged = through(lambda i: slack.dm(OWNER, f"m{i}"), lambda i: shown(i), runs)
    report("Slack", direct, bridged)

Both are measured in the same run, one message after another, so the ratio holds on a loaded
machine: `straight` times a proven request and its answer read whole, as a bridge makes it;
`through` times a message injected into the fake service until its answer shows whole there.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable, Coroutine
from typing import Any

from link_plugin import wire
from link_plugin.channel import BridgeSpec, EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.endpoint import EndpointClient
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness


def straight(endpoint: EndpointRef, thread: str, runs: int) -> list[float]:
    """Seconds for each of `runs` messages sent to the endpoint itself, its answer read whole."""
    client = EndpointClient(endpoint, AGENT)
    parsed = wire.Thread.parse(thread)

    async def one(index: int) -> float:
        started = time.perf_counter()
        async with client.chat(f"direct {index}", parsed, message_id=f"direct-{index}") as reply:
            async for _ in reply.deltas():
                pass
        return time.perf_counter() - started

    async def every() -> list[float]:
        return [await one(index) for index in range(runs)]

    return asyncio.run(every())


def through(send: Callable[[int], object], shown: Callable[[int], bool], runs: int, timeout: float = 60) -> list[float]:
    """Seconds from each of `runs` messages sent through the service to its answer shown whole."""
    times = []
    for index in range(runs):
        started = time.perf_counter()
        send(index)
        deadline = time.monotonic() + timeout
        while not shown(index):
            if time.monotonic() > deadline:
                raise SystemExit(f"message {index} wasn't answered within {timeout:g} s")
            time.sleep(0.001)
        times.append(time.perf_counter() - started)
    return times


def report(channel: str, direct: list[float], bridged: list[float]) -> None:
    """Medians, the overhead per message, and the ratio, with the machine's load."""
    alone, carried = statistics.median(direct), statistics.median(bridged)
    load = os.getloadavg()[0]
    print(f"endpoint alone (anchor): median {alone * 1000:.1f} ms per message ({len(direct)} messages)")
    print(f"through the {channel} bridge: median {carried * 1000:.1f} ms per message ({len(bridged)} messages)")
    overhead = (carried - alone) * 1000
    print(f"  overhead {overhead:.1f} ms per message = {carried / alone:.1f}x the anchor (load {load:.1f})")


def compare(
    channel: str,
    thread: str,
    bridge: Callable[[BridgeSpec], Callable[[], Coroutine[Any, Any, Any]]],
    section: dict[str, Any],
    secrets: dict[str, str],
    *,
    send: Callable[[str], object],
    texts: Callable[[], list[str]],
    ready: Callable[[], object] = lambda: None,
    runs: int = 100,
) -> None:
    """A scripted harness, and the channel's bridge (`bridge` makes its `run` from its spec) in
    front of it; once `ready`, `runs` messages to the endpoint alone and `runs` sent through the
    service (`send`) until their answers show (`texts` of the owner's chat); and the report."""
    harness = ScriptedHarness(wire.new_endpoint_key()).start()
    harness.script = lambda text: Answer(["answer to ", text])
    spec = BridgeSpec(contract=CONTRACT_VERSION, agent=AGENT, endpoint=harness.ref, section=section, secrets=secrets)
    running = Background(bridge(spec))
    try:
        ready()
        direct = straight(harness.ref, thread, runs)
        bridged = through(
            lambda index: send(f"message {index}"),
            lambda index: texts()[index:] == [f"answer to message {index}"],
            runs,
        )
    finally:
        running.stop()
        harness.stop()
    report(channel, direct, bridged)
