"""6. "Remind me at 9:00 to call the dentist": the model calls Link Scheduler's `schedule`, and at
9:00 on the owner's clock the reminder arrives in their Telegram chat, once.

The owner's clock is their time zone: the agent is restarted in a zone where it is under a minute
before nine, so nine comes within the test, on the machine's real clock, in every process
(the scheduler's tool reads the time as the owner says it, its runner when it is due)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from conftest import AGENT

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.phone import Phone

AHEAD = (45, 90, 180)
"""Seconds before nine the agent is restarted at, a try at a time: time for the restart and its
tools to be listed, with `LEEWAY` left. A machine too busy for the first gets a second, longer."""
LEEWAY = 20
"""Seconds before nine still left when the owner asks, for the `schedule` call to come before nine
(at nine or after, "9:00" is tomorrow's)."""
WAIT = 210
"""Seconds the reminder may take to arrive once asked for: until nine, the runner's look, the answer."""


def zone_before_nine(seconds: int) -> tuple[str, datetime]:
    """A POSIX TZ in which it is now `seconds` before 09:00, and when nine comes there (in UTC)."""
    now = datetime.now(UTC).replace(microsecond=0)
    since_midnight = now.hour * 3600 + now.minute * 60 + now.second
    offset = (9 * 3600 - seconds - since_midnight) % 86400
    if offset > 43200:
        offset -= 86400
    sign = "-" if offset >= 0 else "+"  # POSIX counts west of Greenwich as positive
    hours, rest = divmod(abs(offset), 3600)
    return f"LNK{sign}{hours}:{rest // 60:02d}:{rest % 60:02d}", now + timedelta(seconds=seconds)


@pytest.fixture
def before_nine(machine: Machine, owner: Phone, model: Model) -> Iterator[datetime]:
    """The agent restarted a little before nine on the owner's clock, its tools listed: the harness
    lists them when a turn first needs them, and its first turn after a start goes without them.
    When nine is `LEEWAY` seconds away or less by then, it is restarted again, further from nine.
    Gives when nine comes."""
    kept = machine.env.get("TZ")
    for ahead in AHEAD:
        machine.env["TZ"], nine = zone_before_nine(ahead)
        machine.lnk("agent", "restart", AGENT)
        deadline = time.monotonic() + 60
        for attempt in itertools.count(1):
            if "schedule" in owner.ask(model, f"Are your tools there ({attempt})?", 1).asked[0].tool_names:
                break
            assert time.monotonic() < deadline, "the model was offered no schedule within 60 s"
        if (nine - datetime.now(UTC)).total_seconds() > LEEWAY:
            break
    else:
        raise AssertionError(f"nine was never more than {LEEWAY} s away once the agent's tools were listed")
    yield nine
    if kept is None:
        machine.env.pop("TZ", None)
    else:
        machine.env["TZ"] = kept


def test_a_reminder_at_nine_arrives_in_the_owners_chat_once(
    machine: Machine, owner: Phone, model: Model, before_nine: datetime
) -> None:
    said = owner.ask(model, "Remind me at 9:00 to call the dentist", calls=2)
    assert said.tool_call == (
        "schedule",
        {"message": "Remind the owner to call the dentist", "at": "9:00", "title": "call the dentist"},
    )
    assert said.answer == "I'll remind you at 9:00."
    (pending,) = json.loads(machine.lnk("agent", "schedules", AGENT, "--json").stdout)
    assert pending["title"] == "call the dentist" and pending["repeat"] is None
    assert datetime.fromisoformat(pending["at"]) == before_nine, "this nine on the owner's clock"

    model.expect(1)
    reminder = owner.wait_for_message("Time to call the dentist!", timeout=WAIT)
    asked = model.requests[-1].json["messages"][-1]["content"]
    assert "not your owner" in asked and "Remind the owner to call the dentist" in asked
    assert "remember" not in model.requests[-1].tool_names, "a schedule's message is never the owner's"
    time.sleep(5)  # a second look of the runner would say it again
    assert [m for m in owner.messages() if m.text == reminder.text] == [reminder]
    assert json.loads(machine.lnk("agent", "schedules", AGENT, "--json").stdout) == []
