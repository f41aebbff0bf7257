"""The runner: each message said when due, as someone else's, and its answer sent where it goes.

The endpoint is a harness speaking the real wire (lnk_testing's ScriptedHarness: proof, key,
`Link-From`, `Link-Hops`, `Link-Tools`, its hop cap); the clock is the test's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FakeClock
from lnk_scheduler.runner import Driver, EndpointDriver, Refused, Runner
from lnk_scheduler.store import Due, Store
from lnk_scheduler.tool import Caller, Scheduler, Settings

from link_plugin import wire
from link_plugin.endpoint import EndpointClient
from link_plugin.scheduler import Peer, outbox, waiting
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness

OWNER = Caller(thread="telegram:42", hops=0, tools=frozenset({"memory", "scheduler-main"}))


@pytest.fixture
def harness() -> Iterator[ScriptedHarness]:
    served = ScriptedHarness(wire.new_endpoint_key(), hops=3).start()
    served.script = lambda text: Answer([f"noted: {text}"])
    yield served
    served.stop()


class Logged(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


def _runner(store: Store, harness: ScriptedHarness, clock: FakeClock, channels: list[str], log: Logged) -> Runner:
    driver = EndpointDriver(EndpointClient(harness.ref, AGENT))
    return Runner(store, driver, channels, log, now=clock)


def _shown(store: Store, channel: str) -> list[tuple[str | None, str]]:
    return [(notice.chat, notice.text) for _, notice in waiting(outbox(store.folder, channel))]


def test_a_daily_schedule_is_said_at_its_time_as_the_schedules_and_answered_in_the_owners_chat(
    scheduler: Scheduler, store: Store, clock: FakeClock, harness: ScriptedHarness
) -> None:
    due = scheduler.schedule(OWNER, "water the plants", "09:00", "FREQ=DAILY", None)
    runner = _runner(store, harness, clock, ["telegram", "slack"], Logged())
    assert asyncio.run(runner.once()) == 0 and harness.received == []
    clock.move(hours=1)
    assert asyncio.run(runner.once()) == 1
    said = harness.received[0]
    assert said.thread == f"schedule:{due.id}" and said.text == "water the plants"
    assert said.headers[wire.FROM.lower()] == f"schedule:{due.id}"
    assert said.headers[wire.HOPS.lower()] == "1"
    assert said.key == f"schedule-{due.id}-{int(datetime(2026, 12, 2, 9, tzinfo=UTC).timestamp())}"
    assert _shown(store, "telegram") == [(None, "noted: water the plants")]
    assert _shown(store, "slack") == []
    assert asyncio.run(runner.once()) == 0, "said once a day"
    clock.move(days=1)
    assert asyncio.run(runner.once()) == 1 and len(harness.received) == 2


def test_a_schedule_survives_a_restart_and_missed_days_are_said_once(
    scheduler: Scheduler, store: Store, clock: FakeClock, harness: ScriptedHarness
) -> None:
    scheduler.schedule(OWNER, "water the plants", "09:00", "FREQ=DAILY", None)
    clock.move(days=3, hours=4)  # the bridge and the machine were off for three mornings
    restarted = _runner(Store(store.folder), harness, clock, ["telegram"], Logged())
    assert asyncio.run(restarted.once()) == 1
    assert asyncio.run(restarted.once()) == 0
    assert [m.text for m in harness.received] == ["water the plants"]
    assert Store(store.folder).all()[0].at == datetime(2026, 12, 6, 9, tzinfo=UTC)


def test_a_subagent_is_narrowed_and_its_answer_goes_up_to_its_parent_conversation(
    scheduler: Scheduler, store: Store, clock: FakeClock, harness: ScriptedHarness
) -> None:
    started = scheduler.start_subagent(OWNER, "find the invoice", ["memory"])
    runner = _runner(store, harness, clock, ["telegram"], Logged())
    asyncio.run(runner.once())  # the task, then its answer said to the parent
    asyncio.run(runner.once())
    task, up = harness.received
    assert task.thread == f"subagent:{started.id}"
    assert task.headers[wire.FROM.lower()] == "subagent:telegram:42"
    assert task.headers[wire.TOOLS.lower()] == "memory"
    assert up.thread == "telegram:42" and up.text == "noted: find the invoice"
    assert up.headers[wire.FROM.lower()] == f"subagent:{started.id}" and up.headers[wire.HOPS.lower()] == "2"
    assert _shown(store, "telegram") == [("42", "noted: noted: find the invoice")]
    assert store.all() == [] and store.parent(task.thread) is None


def test_a_harness_that_cannot_narrow_gets_no_narrowed_subagent(
    scheduler: Scheduler, store: Store, clock: FakeClock, harness: ScriptedHarness
) -> None:
    """Written while the harness narrowed, said after it changed to one that doesn't: refused."""
    scheduler.start_subagent(OWNER, "read the notes", ["memory"])
    log = Logged()
    driver = EndpointDriver(EndpointClient(harness.ref, AGENT))
    assert asyncio.run(Runner(store, driver, ["telegram"], log, now=clock, narrows=False).once()) == 0
    assert harness.received == [] and store.all() == [] and "doesn't narrow" in log[0]


def test_with_no_channel_connected_an_answer_is_kept_in_the_log(
    scheduler: Scheduler, store: Store, clock: FakeClock, harness: ScriptedHarness
) -> None:
    scheduler.schedule(OWNER, "call the dentist", "09:00", None, None)
    log = Logged()
    clock.move(hours=1)
    asyncio.run(_runner(store, harness, clock, [], log).once())
    assert any("noted: call the dentist" in line and "kept here" in line for line in log)
    assert not (store.folder / "outbox").exists()


def test_a_message_waits_while_the_agent_cannot_be_reached(
    scheduler: Scheduler, store: Store, clock: FakeClock, harness: ScriptedHarness
) -> None:
    scheduler.schedule(OWNER, "call the dentist", "09:00", None, None)
    clock.move(hours=1)
    harness.stop()
    log = Logged()
    runner = _runner(store, harness, clock, ["telegram"], log)
    assert asyncio.run(runner.once()) == 0 and asyncio.run(runner.once()) == 0 and len(store.all()) == 1
    assert len(log) == 1 and "can't be reached" in log[0], "said once, not at every look"
    harness.start()
    assert asyncio.run(runner.once()) == 1 and store.all() == []


def test_a_message_past_the_hop_cap_is_refused_and_not_said_again(
    store: Store, clock: FakeClock, harness: ScriptedHarness
) -> None:
    far = Caller(thread="agent:someone", hops=3)  # the harness's cap is 3: this one comes 4 hops
    Scheduler(store, Settings(agent_id="a", peers={}, narrows=True), now=clock).schedule(far, "ping", None, None, None)
    log = Logged()
    assert asyncio.run(_runner(store, harness, clock, ["telegram"], log).once()) == 0
    assert store.all() == [] and "403" in log[0] and harness.received == []


class Pinging:
    """Two agents whose models answer every message by messaging the other, in process: each
    checks the hop cap as a harness does and calls the scheduler with the hops its harness tells."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.said: list[tuple[str, int]] = []
        self.schedulers: dict[str, Scheduler] = {}

    def driver(self, name: str, other: str) -> Driver:
        pinging = self

        class One:
            async def say(self, due: Due) -> str | None:
                if due.hops > pinging.cap:
                    raise Refused(f"{wire.HOPS} {due.hops} is past the cap")
                pinging.said.append((name, due.hops))
                pinging.schedulers[name].message_agent(Caller(thread=due.thread, hops=due.hops), other, "ping")
                return "pinged back"

        return One()


def test_a_hop_cap_stops_two_agents_pinging_each_other(tmp_path: Path, clock: FakeClock) -> None:
    stores = {name: Store(tmp_path / name / "Scheduler") for name in ("a", "b")}
    pinging = Pinging(cap=4)
    for name, other in (("a", "b"), ("b", "a")):
        peers = {other: Peer(id=f"{other}agent", state=str(stores[other].folder))}
        pinging.schedulers[name] = Scheduler(stores[name], Settings(f"{name}agent", peers, True), now=clock)
    pinging.schedulers["a"].message_agent(Caller(thread="telegram:42"), "b", "start pinging")
    log = Logged()
    runners = [Runner(stores[n], pinging.driver(n, o), [], log, now=clock) for n, o in (("a", "b"), ("b", "a"))]

    async def rounds() -> None:
        for _ in range(20):
            for runner in runners:
                await runner.once()

    asyncio.run(rounds())
    assert pinging.said == [("b", 1), ("a", 2), ("b", 3), ("a", 4)]
    assert stores["a"].all() == [] and stores["b"].all() == []
    assert any("past the cap" in line for line in log)
