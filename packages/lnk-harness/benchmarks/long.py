"""Long conversations: time to first token and CPU per turn at turn 1, turn 1,000 and 52,000 events.

    python benchmarks/long.py [--turns 30] [--events 52000]

The histories are written straight to disk in the harness's own format (each event a file, as
the harness writes them), as a harness that answered a thousand turns, or some thirteen thousand,
would have left them: every message with its key (Link-Message-Id, as the bridges send), its
answer and the record that it went out; every fourth turn a tool call. Then, against the
conformance kit's stand-in provider on the loopback, in one run:

1. The first turn of each long conversation, as the first harness since it was written sees it
   (it reads the history once), and after that harness starts again.
2. Turns at each length, alternated: a new conversation's first turn, the next turn of the one
   past 1,000 turns, the next of the one past 52,000 events; each beside two requests straight to
   the stand-in provider (the anchors, the same client, the same moment): one with the new message
   alone, and one with the window the harness sends at that length (the conversation's newest
   100,000 characters, read from its events by the harness's own `Window`), which any client of
   the model sends and the model reads. p50 of each, the ratios, and the harness's CPU time per
   turn (a whole turn: the answer, the transcript and whatever it keeps after), which should not
   grow with the length.

Targets: at most 10 ms to the first token at any length, and CPU per turn independent of length.
The machine's load is printed with the figures: on a shared machine latency moves with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from figures import StandIns, agent_settings, cpu_seconds, first_token, headers, rss_kib, serve, stand_ins

from link_conformance.running import free_block, wait_for_port
from link_plugin import wire
from link_plugin.layout import AgentFolder
from lnk_harness.events import (
    Answer,
    Asked,
    CallMade,
    Delivered,
    Event,
    EventLog,
    MessageIn,
    Numbered,
    Output,
    Result,
    event_name,
)
from lnk_harness.transcript import Rendered, header, render
from lnk_harness.window import Window

TTFT_GOAL_MS = 10.0
SIDE = "the question, as a person asks it, with a little context around it so it is not too short. "
SAID = "An answer of a few sentences, which is what most answers are; a list or a table would be longer. "
FOUND = "What the tool found: a few lines of results, each with a title and a short excerpt of the page. "


@dataclass
class Written:
    thread: str
    turns: int = 0
    events: int = 0
    keys: list[str] = field(default_factory=list)
    window: list[dict[str, object]] = field(default_factory=list)
    """What the harness shows the model of it: its newest 100,000 characters, from a message on."""


def write_history(chats: Path, thread: str, events: int) -> Written:
    """A conversation of about `events` events, in whole turns, as a harness leaves it: each event a
    file, and the transcript rendered from them (conversation.md, and its lock saying how far)."""
    conversation = chats / wire.Thread.parse(thread).folder
    folder = conversation / "events"
    folder.mkdir(parents=True)
    written = Written(thread)
    at = time.time() - events * 10.0
    numbered: list[Numbered] = []

    def put(event: Event) -> int:
        written.events += 1
        fd = os.open(folder / event_name(written.events), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, event.model_dump_json().encode())
        finally:
            os.close(fd)
        numbered.append((written.events, event))
        return written.events

    while written.events < events:
        turn = f"bench/{written.turns}"
        at += 10.0
        key = f"bench-{written.turns}"
        asked = put(MessageIn(text=f"{written.turns}: {SIDE * (1 + written.turns % 3)}", key=key, at=at))
        text = SAID * (2 + written.turns % 5)
        if written.turns % 4 == 3:
            call = Asked(id=f"call_{written.turns}", name="search", arguments='{"query": "the question"}')
            put(Output(turn=turn, took=[asked], text="Let me look.", calls=[call], at=at + 1))
            put(CallMade(turn=turn, call=call.id, name=call.name, at=at + 1))
            put(Result(turn=turn, call=call.id, name=call.name, content=FOUND * 5, at=at + 2))
            put(Output(turn=turn, text=text, at=at + 3))
            text = f"Let me look.\n\n{text}"
        else:
            put(Output(turn=turn, took=[asked], text=text, at=at + 1))
        answer = put(Answer(turn=turn, messages=[asked], text=text, waited=True, name=asked, at=at + 4))
        put(Delivered(answer=answer, via="request", at=at + 4))
        written.keys.append(key)
        written.turns += 1
    text, speaker = render(numbered, "main")
    data = (header(wire.Thread.parse(thread)) + text).encode()
    (conversation / "conversation.md").write_bytes(data)
    done = Rendered(through=written.events, speaker=speaker, size=len(data))
    (conversation / "conversation.lock").write_text(done.model_dump_json())
    written.window = Window.from_tail(EventLog(folder), written.events).messages()
    return written


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def straight(client: httpx.AsyncClient, url: str, window: list[dict[str, object]]) -> float:
    """To the first token straight from the provider, sent `window` and the next question."""
    return await first_token(client, url, {}, "the next question", window)


async def turn(client: httpx.AsyncClient, endpoint: str, thread: str, key: str) -> float:
    return await first_token(
        client, endpoint, {**headers(0, thread), wire.MESSAGE_ID: key}, f"the next question ({key})"
    )


async def settled(process_pid: int) -> float:
    """The harness's CPU seconds once what a turn does after its answer (the transcript) is done."""
    await asyncio.sleep(0.3)
    return cpu_seconds(process_pid)


async def first_turns(provider: StandIns, files: list[Path], port: int, long: list[Written], label: str) -> None:
    process = serve(files, port)
    endpoint = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        wait_for_port(port, 30, process)
        async with httpx.AsyncClient(timeout=600, trust_env=False) as client:
            await first_token(client, endpoint, headers(0, "bench:warm"), "warm")
            print(label)
            for written in long:
                cpu = await settled(process.pid)
                started = time.perf_counter()
                ttft = await turn(client, endpoint, written.thread, f"first-{label[:5]}-{written.turns}")
                whole = time.perf_counter() - started
                cpu = await settled(process.pid) - cpu
                written.turns += 1
                print(
                    f"  {written.events:>7,} events: first token {ttft * 1000:9.1f} ms, "
                    f"answer {whole * 1000:9.1f} ms, harness CPU {cpu * 1000:8.0f} ms"
                )
    finally:
        process.terminate()
        process.wait()


async def lengths(provider: StandIns, files: list[Path], port: int, long: list[Written], turns: int) -> None:
    process = serve(files, port)
    endpoint = f"http://127.0.0.1:{port}/v1/chat/completions"
    direct = f"{provider.model}/chat/completions"
    rows = ["turn 1 (a new conversation)", *(f"turn {w.turns + 1:,} ({w.events:,} events)" for w in long)]
    windows = [[], *(w.window for w in long)]
    alone: dict[str, list[float]] = {row: [] for row in rows}
    windowed: dict[str, list[float]] = {row: [] for row in rows}
    through: dict[str, list[float]] = {row: [] for row in rows}
    cpu: dict[str, float] = dict.fromkeys(rows, 0.0)
    table: dict[str, tuple[float, float, float]] = {}
    try:
        wait_for_port(port, 30, process)
        async with httpx.AsyncClient(timeout=600, trust_env=False) as client:
            for warm in range(3):
                await first_token(client, endpoint, headers(0, f"bench:warm{warm}"), "warm")
                await first_token(client, direct, {}, "warm")
            for written in long:  # each loaded once by this process before the figures
                await turn(client, endpoint, written.thread, f"warm-{written.turns}")
                written.turns += 1
            rounds = 3
            for round_ in range(rounds):
                for index, row in enumerate(rows):
                    before = await settled(process.pid)
                    for number in range(turns // rounds):
                        thread = f"bench:new-{round_}-{number}" if index == 0 else long[index - 1].thread
                        alone[row].append(await straight(client, direct, []))
                        windowed[row].append(await straight(client, direct, windows[index]))
                        key = f"new-{round_}-{number}" if index == 0 else f"next-{long[index - 1].turns}"
                        through[row].append(await turn(client, endpoint, thread, key))
                        if index:
                            long[index - 1].turns += 1
                    cpu[row] += await settled(process.pid) - before
        count = turns // rounds * rounds
        print(f"time to first token, p50 of {count} turns each, alternated (goal: at most {TTFT_GOAL_MS:g} ms):")
        print("  (provider: straight to it with the message alone; +window: with the window the harness sends)")
        head = ("provider", "+window", "harness", "/provider", "/+window", "added", "CPU/turn")
        print(f"  {'':<30}" + "".join(f"{h:>11}" for h in head))
        for row in rows:
            first, sent, through_ = p50(alone[row]), p50(windowed[row]), p50(through[row])
            added = p50([t - s for s, t in zip(windowed[row], through[row], strict=True)])
            print(
                f"  {row:<30}{first:9.2f}ms{sent:9.2f}ms{through_:9.2f}ms{through_ / first:10.2f}x"
                f"{through_ / sent:10.2f}x{added:9.2f}ms{cpu[row] / count * 1000:9.2f}ms"
            )
            table[row] = (first, sent, through_)
        print(f"  resident memory of the harness after them: {rss_kib(process.pid) / 1024:.1f} MiB")
        table_rows(rows, table, cpu, count, long)
    finally:
        process.terminate()
        process.wait()


def table_rows(
    rows: list[str],
    table: dict[str, tuple[float, float, float]],
    cpu: dict[str, float],
    count: int,
    long: list[Written],
) -> None:
    """The whole table's rows for long conversations: turn 1,000, and the longest one."""
    new = table[rows[0]][2]
    for row, written, what in zip(
        rows[1:],
        long,
        ("time to first token at turn 1,000 of one conversation, over the provider", "conversation with 52,000 events"),
        strict=True,
    ):
        alone, sent, through = table[row]
        figure = f"{through:.1f} ms to the first token ({written.events:,} events); turn 1: {new:.1f} ms"
        if written is long[-1]:
            figure += f"; CPU per turn {cpu[row] / count * 1000:.1f} ms (turn 1: {cpu[rows[0]] / count * 1000:.1f} ms)"
        anchor = (
            f"provider called directly {alone:.1f} ms ({through / alone:.2f}x), "
            f"with the same window {sent:.1f} ms ({through / sent:.2f}x), load {os.getloadavg()[0]:.1f}"
        )
        goal = "<= 10 ms" if written is not long[-1] else "<= 10 ms; CPU per turn independent of length"
        print("table-row " + json.dumps({"row": what, "figure": figure, "anchor": anchor, "goal": goal}), flush=True)


async def main(turns: int, events: int) -> None:
    print(f"load average at the start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="lnk-harness-long-") as folder, stand_ins() as provider:
        root = Path(folder)
        files = [agent_settings(root, 0, provider.model)]
        chats = AgentFolder(root / "agent0").chats
        started = time.perf_counter()
        long = [write_history(chats, "bench:thousand", 4_750), write_history(chats, "bench:long", events)]
        print(
            f"histories written straight to disk in {time.perf_counter() - started:.1f} s: "
            + ", ".join(f"{w.thread} {w.turns:,} turns, {w.events:,} events" for w in long)
        )
        port = free_block(2)
        await first_turns(provider, files, port, long, "first turn of each, the first harness to see it:")
        await first_turns(provider, files, port, long, "first turn of each after that harness starts again:")
        await lengths(provider, files, port, long, turns)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--events", type=int, default=52_000)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.turns, arguments.events))
