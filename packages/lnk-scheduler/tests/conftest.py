"""A fake clock and a scheduler over a temporary state folder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from lnk_scheduler.store import Store
from lnk_scheduler.tool import Scheduler, Settings

from link_plugin.scheduler import Peer


class FakeClock:
    """Time as a test says it: it moves only when told."""

    def __init__(self, start: datetime) -> None:
        self.at = start

    def __call__(self) -> datetime:
        return self.at

    def move(self, **delta: float) -> datetime:
        self.at += timedelta(**delta)
        return self.at


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner's zone is UTC in the tests, so a time said as 09:00 is 09:00 UTC."""
    monkeypatch.setenv("TZ", "UTC")
    import time

    time.tzset()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 12, 2, 8, 0, tzinfo=UTC))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "main" / "Scheduler")


@pytest.fixture
def other(tmp_path: Path) -> Store:
    return Store(tmp_path / "work" / "Scheduler")


@pytest.fixture
def scheduler(store: Store, other: Store, clock: FakeClock) -> Scheduler:
    settings = Settings(
        agent_id="mainagent001",
        peers={"work": Peer(id="workagent002", state=str(other.folder))},
        narrows=True,
    )
    return Scheduler(store, settings, now=clock)
