"""What every channel's bridge and `connect` do alike (`lnk_testing.scenarios`), against the fake Bot API."""

from lnk_testing.scenarios import Scenarios


class TestTelegram(Scenarios):
    """With conftest.py's `service`, `bridge` and `control`."""
