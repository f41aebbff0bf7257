"""What is due, on disk: a daily schedule comes back each day, and a missed one is said once."""

from __future__ import annotations

from datetime import UTC, datetime

from conftest import FakeClock
from lnk_scheduler.store import Store
from lnk_scheduler.tool import Caller, Scheduler

OWNER = Caller(thread="telegram:42")


def test_a_daily_schedule_is_due_at_its_time_each_day(scheduler: Scheduler, store: Store, clock: FakeClock) -> None:
    due = scheduler.schedule(OWNER, "water the plants", "09:00", "FREQ=DAILY", None)
    assert store.due(clock.move(minutes=59)) == []
    now = clock.move(minutes=1)
    assert store.due(now) == [due]
    moved = store.said(due, now)
    assert moved is not None and moved.at == datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    assert store.due(clock.move(hours=23, minutes=59)) == []
    assert [d.id for d in store.due(clock.move(minutes=1))] == [due.id]


def test_a_one_off_goes_once_said(scheduler: Scheduler, store: Store, clock: FakeClock) -> None:
    due = scheduler.schedule(OWNER, "call the dentist", "09:00", None, None)
    assert store.said(due, clock.move(hours=1)) is None
    assert store.all() == []


def test_missed_occurrences_are_said_once(scheduler: Scheduler, store: Store, clock: FakeClock) -> None:
    due = scheduler.schedule(OWNER, "water the plants", "09:00", "FREQ=DAILY", None)
    now = clock.move(days=3, hours=2)  # the machine was off for three mornings
    assert store.due(now) == [due]
    moved = store.said(due, now)
    assert moved is not None and moved.at == datetime(2026, 12, 6, 9, 0, tzinfo=UTC)
    assert store.due(now) == []


def test_what_is_due_survives_a_restart(scheduler: Scheduler, store: Store, clock: FakeClock) -> None:
    due = scheduler.schedule(OWNER, "stand-up", "09:00", "FREQ=WEEKLY;BYDAY=MO,WE", "stand-up")
    again = Store(store.folder)  # another process, or the machine back on
    assert again.all() == [due]
    assert again.due(clock.move(hours=1)) == [due]


def test_a_message_cancelled_while_said_is_not_brought_back(
    scheduler: Scheduler, store: Store, clock: FakeClock
) -> None:
    due = scheduler.schedule(OWNER, "x", "09:00", "FREQ=DAILY", None)
    now = clock.move(hours=1)
    store.cancel(due.id)
    assert store.said(due, now) is None and store.all() == []


def test_a_file_that_does_not_read_is_skipped_and_kept(scheduler: Scheduler, store: Store) -> None:
    due = scheduler.schedule(OWNER, "x", "09:00", None, None)
    broken = store.due_folder / "broken.json"
    broken.write_text("{not json")
    assert store.all() == [due] and broken.exists()
