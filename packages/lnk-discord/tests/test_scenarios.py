"""What every channel's bridge and `connect` do alike (`lnk_testing.scenarios`), against the fake Discord
(REST and Gateway)."""

from lnk_testing.scenarios import Scenarios


class TestDiscord(Scenarios):
    """With conftest.py's `service`, `bridge` and `control`."""
