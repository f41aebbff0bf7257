"""Link Harness in the real sandbox, killed mid-answer at each process that keeps it there: the
harness itself, the sandbox's relay (its PID 1, which starts the harness and carries its port),
bubblewrap, and the `lnk-sandbox run` around it. Whichever ends, the whole sandbox ends with it;
the supervisor starts it again, the new harness finishes the turn its dead self left, and the
owner's Telegram shows the answer cut short, saying it will follow, then the whole answer once.
A tool's own sandbox killed the same way (Link Scheduler's) is started again for the next call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from world import PYTHON, World, sandboxes, wait_until

from link_conformance import Reply, ToolCall
from link_plugin.bridge.carry import INTERRUPTED
from lnk_testing.channels import code_shown
from lnk_testing.telegram import TOKEN, FakeTelegram, User

pytestmark = pytest.mark.skipif(not sandboxes(), reason="bubblewrap can't make a sandbox here")

OWNER = User(id=5550001, first_name="Olive", username="olive")
CHAIN = ("lnk-sandbox run", "bubblewrap", "relay", "harness")
"""The harness's processes from the supervisor's child down, each the parent of the next."""
KILLED = ("harness", "relay", "bubblewrap", "lnk-sandbox run")
SLOW = Reply(chunks=24, delay=0.25)
"""Six seconds of streaming: the kill lands while the answer is still being written."""
BACK_WITHIN = 50.0
"""Seconds the whole answer may take after the kill: less than the minute a lease takes to lapse,
so an answer that waited for the lapse (its holder not seen as gone) fails here."""


@pytest.fixture
def telegram(world: World) -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        world.env["LNK_TELEGRAM_API"] = fake.origin
        yield fake


def _chain(world: World, agent: str) -> dict[str, int] | None:
    """The harness's processes by name, from `lnk-sandbox run` (the supervisor's child) down; None
    while they are starting."""
    return _chain_from(world.state(agent).children["harness"].pid)


def _tool_chain(world: World, tool: str) -> dict[str, int] | None:
    """A tool's sandbox, as for the harness (its server in place of the harness); None while it
    isn't running: the tool bridge starts it on first use."""
    request = f"tool-{tool}.json".encode()
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if b"--request" in argv and argv[argv.index(b"--request") + 1].endswith(request):
            return _chain_from(int(entry.name))
    return None


def _chain_from(run: int | None) -> dict[str, int] | None:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat[0] != "Z":
                children.setdefault(int(stat[1]), []).append(int(entry.name))
    if run is None:
        return None
    found = [run]
    while len(found) < len(CHAIN):
        below = children.get(found[-1], [])
        if len(below) != 1:
            return None
        found.append(below[0])
    return dict(zip(CHAIN, found, strict=True))


def _pair(world: World, telegram: FakeTelegram, agent: str) -> None:
    connect = subprocess.Popen(
        [PYTHON, "-m", "lnk", "agent", "connect", "telegram", agent, "--token-stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=world.env,
    )
    code, shown = code_shown(connect, TOKEN)
    telegram.private(OWNER, code)
    assert connect.wait(timeout=60) == 0, shown


def test_each_process_of_the_sandbox_killed_mid_answer_the_answer_arrives_once(
    world: World, telegram: FakeTelegram
) -> None:
    world.lnk("agent", "keys", "set", "openai", "boxed", "--stdin", input=world.key)
    _pair(world, telegram, "boxed")
    world.lnk("agent", "start", "boxed", "--harness", "link")
    for number, killed in enumerate(KILLED, start=1):
        _killed_mid_answer(world, telegram, f"round {number}, {killed} killed mid-answer", killed)
    _tool_sandbox_killed(world, telegram)


def _tool_sandbox_killed(world: World, telegram: FakeTelegram) -> None:
    """A tool's own sandbox (Link Scheduler's) killed at its relay: the tool bridge starts its server
    again, in a new sandbox, for the next call, which is answered."""
    scheduler = f"scheduler-{world.agent('boxed').id}"
    _schedules_asked(world, telegram, "before its sandbox was killed")
    chain = wait_until(lambda: _tool_chain(world, scheduler), what="the scheduler in its sandbox")
    os.kill(chain["relay"], signal.SIGKILL)
    wait_until(lambda: _tool_chain(world, scheduler) is None, what="the scheduler's sandbox gone")
    _schedules_asked(world, telegram, "after its sandbox was killed")
    assert _tool_chain(world, scheduler) not in (None, chain), "its server runs in a new sandbox"


def _schedules_asked(world: World, telegram: FakeTelegram, when: str) -> None:
    """The owner asks what is scheduled: the agent calls Link Scheduler, which answers."""
    world.provider.script(Reply(tool_calls=[ToolCall("schedules", {})]), Reply(text=f"nothing is scheduled {when}"))
    shown = len(telegram.texts(OWNER.id))
    telegram.private(OWNER, f"What is scheduled ({when})?")
    telegram.wait(lambda: f"nothing is scheduled {when}" in telegram.texts(OWNER.id)[shown:], 30)
    said = [m["content"] for m in world.provider.requests[-1].json["messages"] if m["role"] == "tool"]
    assert json.loads(said[-1]) == {"schedules": []}, f"{when}, the tool answered {said[-1]}"


def _killed_mid_answer(world: World, telegram: FakeTelegram, what: str, killed: str) -> None:
    """The owner asks; once the answer is partly shown, `killed` is; the answer arrives once."""
    outbox = world.agent("boxed").folder.chats / f"telegram:{OWNER.id}" / "outbox"
    story = f"{what}: " + " ".join(f"word-{n}" for n in range(48))
    asked = len(world.provider.requests)
    world.provider.script(replace(SLOW, text=story), Reply(text=story))
    shown = len(telegram.texts(OWNER.id))
    chain = wait_until(lambda: _chain(world, "boxed"), what="the harness in its sandbox")
    restarts = world.state("boxed").children["harness"].restarts
    telegram.private(OWNER, f"Tell me a story ({what})")
    telegram.wait(lambda: any(t != story and story.startswith(t) for t in telegram.texts(OWNER.id)[shown:]), 30)
    os.kill(chain[killed], signal.SIGKILL)
    wait_until(
        lambda: world.state("boxed").children["harness"].restarts > restarts,
        timeout=30,
        what=f"{what}: the supervisor starting the harness again",
    )
    telegram.wait(lambda: story in telegram.texts(OWNER.id)[shown:], timeout=BACK_WITHIN)
    wait_until(lambda: not any(outbox.glob("*")), what=f"{what}: the answer confirmed, none left to hand over")
    cut_short, *rest = telegram.texts(OWNER.id)[shown:]
    assert cut_short.endswith(INTERRUPTED) and story.startswith(cut_short.removesuffix(INTERRUPTED).rstrip()), what
    assert rest == [story], f"{what}: the phone showed {rest}"
    assert len(world.provider.requests) == asked + 2, f"{what}: the turn was asked of the model again once"
