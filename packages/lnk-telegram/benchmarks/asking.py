"""How quickly the bridge asks the owner, and what looking for questions costs: python benchmarks/asking.py

Runs the real bridge between the local fake Bot API, a scripted harness endpoint and a control
socket speaking the approvals protocol on a unix socket, at the default pace (a poll every
0.5 s while a message is carried, every 5 s otherwise), and prints:

- asked: from a tool call starting to wait (in a turn a Telegram message began, 0.1 to 1 s into
  it, as a model takes a while to decide on a call) to its question landing in the owner's
  chat, median and 95th percentile over 20 calls, against the 0.5 s poll (at most one poll's
  wait, half of one on average);
- answered: from the owner's press reaching Telegram to the answer reaching the control socket;
- one poll: the round trip of `GET /approvals` on the unix socket, and the share of the time
  idle polling takes (one poll per 5 s).
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import threading
import time

from carry import OWNER, start_bridge, wait

from link_plugin import wire
from link_plugin.bridge.asking import BUSY, IDLE
from link_plugin.control import ControlClient
from lnk_telegram.api import ENV_API
from lnk_testing.approvals import ControlSocket
from lnk_testing.endpoint import Answer, ScriptedHarness
from lnk_testing.telegram import FakeTelegram


def asked_and_answered(
    telegram: FakeTelegram, harness: ScriptedHarness, control: ControlSocket, runs: int = 20
) -> tuple[list[float], list[float]]:
    started: list[float] = []
    chance = random.Random(7)

    def turn(text: str) -> Answer:
        decided = threading.Event()

        def call() -> None:
            question = control.call("words", "erase", {"word": text})
            started.append(time.monotonic())
            control.decided(question.id).wait()
            decided.set()

        threading.Timer(chance.uniform(0.1, 1.0), call).start()
        return Answer(["done"], hold=decided)

    harness.script = turn
    asks, answers = [], []
    for i in range(runs):
        telegram.private(OWNER, f"erase {i}")
        wait(lambda: any(m.buttons for m in telegram.messages(OWNER.id)))
        (question,) = [m for m in telegram.messages(OWNER.id) if m.buttons]
        asks.append(question.history[0][0] - started[-1])
        pressed = time.monotonic()
        telegram.press(OWNER, question.message_id, "allow")
        wait(lambda n=i + 1: len(control.answered) == n)
        answers.append(time.monotonic() - pressed)
        wait(lambda q=question: telegram.texts(OWNER.id)[-1] == "done" and not q.buttons)
    return asks, answers


def poll_cost(control: ControlSocket, runs: int = 300) -> float:
    client = ControlClient(str(control.path))

    async def polls() -> list[float]:
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            await client.waiting()
            times.append(time.perf_counter() - began)
        return times

    return statistics.median(asyncio.run(polls()))


def main() -> None:
    with ControlSocket.temporary() as control, FakeTelegram() as telegram:
        os.environ[ENV_API] = telegram.origin
        harness = ScriptedHarness(wire.new_endpoint_key()).start()
        bridge = start_bridge(harness.ref, approvals=str(control.path))
        try:
            asks, answers = asked_and_answered(telegram, harness, control)
        finally:
            bridge.stop()
            harness.stop()
        cost = poll_cost(control)
    p95 = sorted(asks)[int(len(asks) * 0.95) - 1]
    print(
        f"call waiting -> question in the chat: median {statistics.median(asks) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms"
    )
    print(f"  = {statistics.median(asks) / BUSY:.2f} of the {BUSY:g} s poll while a message is carried (median)")
    print(f"owner's press -> answer at the control socket: median {statistics.median(answers) * 1000:.0f} ms")
    print(f"one poll (GET /approvals on the unix socket): median {cost * 1e6:.0f} µs")
    print(f"  = {cost / IDLE * 100:.4f}% of the time while idle (a poll per {IDLE:g} s)")


if __name__ == "__main__":
    main()
