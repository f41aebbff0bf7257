"""A harness lists its tools when a turn first needs them, and a first turn doesn't wait long for
them: a test about tools lets its harness list them first, as a person's first message would."""

from __future__ import annotations

import time

from helpers import Harness, say

from link_conformance.provider import StandInProvider


def tools_listed(harness: Harness, provider: StandInProvider, timeout: float = 30.0) -> None:
    """Say something in a conversation of its own until the model is offered tools."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        say(harness, "are your tools there?", "kit:tools-listed")
        if provider.requests[-1].json.get("tools"):
            return
        time.sleep(0.1)
    raise AssertionError(f"no turn was offered tools within {timeout:.0f} s:\n{harness.output()[-2000:]}")
