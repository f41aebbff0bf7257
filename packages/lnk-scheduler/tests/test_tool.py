"""The tool's calls: subagents never get more tools than their parent, schedules keep their times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from lnk_scheduler.store import Store
from lnk_scheduler.tool import Caller, CallError, Scheduler, Settings

from link_plugin import wire

OWNER = Caller(thread="telegram:42", hops=0, tools=frozenset({"memory", "scheduler-main", "web"}))


def test_a_subagent_gets_its_parents_tools_when_none_are_named(scheduler: Scheduler) -> None:
    due = scheduler.start_subagent(OWNER, "find the invoice", None)
    assert due.tools == ["memory", "scheduler-main", "web"]
    assert due.sender == "subagent:telegram:42" and due.reply_to == "telegram:42"
    assert due.thread == f"subagent:{due.id}" and due.hops == 1


def test_a_subagent_gets_fewer_tools(scheduler: Scheduler) -> None:
    assert scheduler.start_subagent(OWNER, "read only", ["memory"]).tools == ["memory"]


def test_a_subagent_cannot_widen_its_parents_tools(scheduler: Scheduler, store: Store) -> None:
    with pytest.raises(CallError, match="shell"):
        scheduler.start_subagent(OWNER, "do it", ["memory", "shell"])
    narrowed_parent = Caller(thread="subagent:abc", hops=1, tools=frozenset({"memory"}))
    with pytest.raises(CallError, match="web"):
        scheduler.start_subagent(narrowed_parent, "go wider", ["web"])
    assert store.all() == []


def test_a_narrowed_parents_subagent_stays_narrowed(scheduler: Scheduler) -> None:
    narrowed_parent = Caller(thread="subagent:abc", hops=1, tools=frozenset({"memory"}))
    due = scheduler.start_subagent(narrowed_parent, "go on", None)
    assert due.tools == ["memory"] and due.hops == 2


def test_a_harness_that_cannot_narrow_refuses_a_narrowed_subagent(store: Store, clock: object) -> None:
    plain = Scheduler(store, Settings(agent_id="a", peers={}, narrows=False))
    with pytest.raises(CallError, match="can't narrow"):
        plain.start_subagent(Caller(thread="telegram:42"), "task", ["memory"])
    assert plain.start_subagent(Caller(thread="telegram:42"), "task", None).tools is None


def test_a_subagent_needs_its_callers_conversation(scheduler: Scheduler) -> None:
    with pytest.raises(CallError, match="which conversation"):
        scheduler.start_subagent(Caller(), "task", None)


def test_the_caller_is_read_from_the_calls_meta() -> None:
    caller = Caller.of({wire.META_THREAD: "slack:C1", wire.META_HOPS: 2, wire.META_TOOLS: ["memory"]})
    assert caller == Caller(thread="slack:C1", hops=2, tools=frozenset({"memory"}))
    assert Caller.of(None) == Caller()
    assert Caller.of({wire.META_HOPS: "many", wire.META_TOOLS: "memory"}) == Caller()


def test_a_schedule_at_a_time_today_or_tomorrow(scheduler: Scheduler) -> None:
    due = scheduler.schedule(OWNER, "call the dentist", "09:00", None, "dentist")
    assert due.at == datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    assert due.sender == due.thread == f"schedule:{due.id}"
    passed = scheduler.schedule(OWNER, "breakfast", "07:30", None, None)
    assert passed.at == datetime(2026, 12, 3, 7, 30, tzinfo=UTC)


def test_a_daily_rule_starts_at_its_first_time(scheduler: Scheduler) -> None:
    due = scheduler.schedule(OWNER, "stand-up", "2026-12-02T09:15", "FREQ=DAILY", None)
    assert due.at == datetime(2026, 12, 2, 9, 15, tzinfo=UTC) and due.rule == "FREQ=DAILY"


@pytest.mark.parametrize(
    ("at", "repeat", "says"),
    [
        ("tomorrowish", None, "not a time"),
        ("09:00", "FREQ=NEVER", "not an RRULE"),
        ("09:00", "FREQ=SECONDLY", "more often than once a minute"),
    ],
)
def test_a_bad_time_or_rule_is_refused_and_nothing_is_kept(
    scheduler: Scheduler, store: Store, at: str, repeat: str | None, says: str
) -> None:
    with pytest.raises(CallError, match=says):
        scheduler.schedule(OWNER, "x", at, repeat, None)
    assert store.all() == []


def test_schedules_list_and_cancel(scheduler: Scheduler) -> None:
    later = scheduler.schedule(OWNER, "later", "10:00", None, None)
    sooner = scheduler.schedule(OWNER, "sooner", "09:00", None, None)
    scheduler.start_subagent(OWNER, "not a schedule", None)
    assert [due.id for due in scheduler.schedules()] == [sooner.id, later.id]
    assert scheduler.cancel(sooner.id).id == sooner.id
    assert [due.id for due in scheduler.schedules()] == [later.id]
    with pytest.raises(CallError, match="no schedule"):
        scheduler.cancel(sooner.id)


def test_a_message_to_another_agent_waits_in_its_own_state(scheduler: Scheduler, store: Store, other: Store) -> None:
    due = scheduler.message_agent(Caller(thread="telegram:42", hops=1), "work", "what's on today?")
    assert other.all() == [due] and store.all() == []
    assert due.sender == "agent:mainagent001" and due.thread == "agent:mainagent001" and due.hops == 2
    with pytest.raises(CallError, match="no other agent named 'play'"):
        scheduler.message_agent(OWNER, "play", "hi")
