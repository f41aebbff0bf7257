"""When a message is due: once at a time, or on a repeating rule (RFC 5545 RRULE, by dateutil).

Times without a zone are read in the machine's local zone, as its owner says them ("at 9:00"),
and kept in UTC. A rule repeats from its first time (`DTSTART`): `FREQ=DAILY` from 09:00 fires at
09:00 every day. The next time is always the first one after *now*: a machine that was off past
three occurrences says the message once when it is back, not three times.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from dateutil.rrule import rrule, rrulestr

MIN_INTERVAL = 60.0
"""Seconds: a rule repeating more often than once a minute is refused (the runner wakes each second
but an agent answering every few seconds is a loop, not a schedule)."""


class RuleError(ValueError):
    """A time or a rule that doesn't read: the message says what to give instead."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(f"{message}. {hint}" if hint else f"{message}.")


def local_zone() -> tzinfo:
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    return zone


def parse_time(text: str, now: datetime, zone: tzinfo | None = None) -> datetime:
    """An ISO 8601 date-time (`2026-12-03T09:00`, a zone optional) or a time today (`09:00`,
    tomorrow when it has passed), in UTC."""
    text = text.strip()
    zone = zone or local_zone()
    try:
        if len(text) <= 8 and ":" in text and "T" not in text:
            clock = datetime.strptime(text, "%H:%M:%S" if text.count(":") == 2 else "%H:%M").time()
            local_now = now.astimezone(zone)
            at = datetime.combine(local_now.date(), clock, zone)
            if at <= local_now:
                at = datetime.combine(local_now.date() + timedelta(days=1), clock, zone)
            return at.astimezone(UTC)
        at = datetime.fromisoformat(text)
    except ValueError:
        raise RuleError(
            f"{text!r} is not a time",
            "Give an ISO 8601 date-time such as 2026-12-03T09:00, or a time today such as 09:00.",
        ) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=zone)
    return at.astimezone(UTC)


def parse_rule(text: str, start: datetime, zone: tzinfo | None = None) -> rrule:
    """An RFC 5545 RRULE (`FREQ=DAILY`, `FREQ=WEEKLY;BYDAY=MO,WE`), repeating from `start` in the
    owner's zone, so a daily 09:00 stays at 09:00 across a change of summer time."""
    zone = zone or local_zone()
    body = text.strip().removeprefix("RRULE:")
    try:
        rule = rrulestr(body, dtstart=start.astimezone(zone))
    except (ValueError, TypeError) as exc:
        raise RuleError(
            f"{text!r} is not an RRULE ({exc})", "e.g. FREQ=DAILY, or FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8;BYMINUTE=30"
        ) from None
    if not isinstance(rule, rrule):
        raise RuleError(f"{text!r} is more than one rule: give one RRULE")
    first = rule.after(start.astimezone(zone), inc=True)
    second = rule.after(first, inc=False) if first is not None else None
    if first is not None and second is not None and (second - first).total_seconds() < MIN_INTERVAL:
        raise RuleError(f"{text!r} repeats more often than once a minute", "Repeat at most every minute.")
    return rule


def next_time(rule_text: str | None, start: datetime, after: datetime, zone: tzinfo | None = None) -> datetime | None:
    """The first time of the rule strictly after `after`, in UTC; None when it has no more (or it
    is a one-off)."""
    if rule_text is None:
        return None
    zone = zone or local_zone()
    rule = parse_rule(rule_text, start, zone)
    found = rule.after(after.astimezone(zone), inc=False)
    return None if found is None else found.astimezone(UTC)


def first_time(rule_text: str | None, start: datetime, zone: tzinfo | None = None) -> datetime | None:
    """The first time of a rule from `start` (itself when it fits); `start` for a one-off."""
    if rule_text is None:
        return start
    zone = zone or local_zone()
    found = parse_rule(rule_text, start, zone).after(start.astimezone(zone), inc=True)
    return None if found is None else found.astimezone(UTC)
