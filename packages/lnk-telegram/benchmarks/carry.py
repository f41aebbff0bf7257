"""How fast the bridge carries: python benchmarks/carry.py

Runs the real bridge (python-telegram-bot, the shared bridge parts) between the local fake Bot
API and a scripted harness endpoint, all on this machine, at the default pace (edits about once
a second), and prints:

- latency: from the harness writing an answer's first token to that text being visible in the
  chat (the first sendMessage landing), median and 95th percentile over 30 messages, and as a
  share of the 1 s edit interval;
- throughput: owner's messages carried per second, each a group mention of its own (a
  conversation each, so none steers another), from the first sent to the last answer shown
  whole, against Telegram's own limit of about 30 messages a second per bot.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from link_plugin import wire
from link_plugin.bridge.answer import INTERVAL
from link_plugin.channel import BridgeSpec, EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from lnk_telegram.api import ENV_API
from lnk_telegram.bridge import TelegramBridge
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness
from lnk_testing.telegram import TOKEN, FakeTelegram, User

OWNER = User(id=777001, first_name="Owner")
TELEGRAM_LIMIT = 30.0
"""Messages a second Telegram lets one bot send (its documented broadcast limit)."""


def start_bridge(
    endpoint: EndpointRef, approvals: str | None = None, *, folder: str | None = None, **options: Any
) -> Background:
    """The real bridge for the benchmark's owner, at its default pace, `options` as TelegramBridge takes them."""
    spec = BridgeSpec(
        contract=CONTRACT_VERSION,
        agent=AGENT,
        endpoint=endpoint,
        section={"owner": OWNER.id},
        secrets={"bot-token": TOKEN},
        folder=folder,
        approvals=approvals,
    )
    return Background(TelegramBridge(spec, **{"poll": 5, **options}).run)


def wait(condition: Callable[[], object], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("the benchmark didn't finish in time")
        time.sleep(0.002)


def latency(telegram: FakeTelegram, harness: ScriptedHarness, runs: int = 30) -> list[float]:
    harness.script = lambda text: Answer(["first token", " and more"], delay=0.05)
    gaps = []
    for i in range(runs):
        telegram.private(OWNER, f"question {i}")
        wait(lambda n=i + 1: len(telegram.texts(OWNER.id)) == n and telegram.texts(OWNER.id)[-1].endswith("more"))
        shown = telegram.messages(OWNER.id)[-1].history[0][0]
        gaps.append(shown - harness.first_piece_at[-1])
    return gaps


def throughput(telegram: FakeTelegram, harness: ScriptedHarness, messages: int = 300) -> float:
    harness.script = lambda text: Answer(["answer to ", text])
    groups = [-100_000_000 - i for i in range(messages)]
    started = time.monotonic()
    for i, group in enumerate(groups):
        telegram.group(group, OWNER, f"message {i}", mention=True)
    wait(lambda: all(telegram.texts(g)[-1:] == [f"answer to message {i}"] for i, g in enumerate(groups)))
    return messages / (time.monotonic() - started)


def main() -> None:
    with FakeTelegram() as telegram:
        os.environ[ENV_API] = telegram.origin
        telegram.meet(OWNER)
        harness = ScriptedHarness(wire.new_endpoint_key()).start()
        bridge = start_bridge(harness.ref)
        try:
            gaps = latency(telegram, harness)
            rate = throughput(telegram, harness)
        finally:
            bridge.stop()
            harness.stop()
    median = statistics.median(gaps)
    p95 = sorted(gaps)[int(len(gaps) * 0.95) - 1]
    print(f"first token -> first visible text: median {median * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms")
    print(f"  = {median / INTERVAL:.3f} of the {INTERVAL:g} s edit interval (median)")
    print(f"messages carried: {rate:.1f} per second")
    print(f"  = {rate / TELEGRAM_LIMIT:.2f}x Telegram's limit of {TELEGRAM_LIMIT:g} messages a second per bot")


if __name__ == "__main__":
    main()
