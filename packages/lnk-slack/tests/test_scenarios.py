"""What every channel's bridge and `connect` do alike (`lnk_testing.scenarios`), against the fake Slack
(Web API and Socket Mode)."""

from lnk_testing.scenarios import Scenarios


class TestSlack(Scenarios):
    """With conftest.py's `service`, `bridge` and `control`."""
