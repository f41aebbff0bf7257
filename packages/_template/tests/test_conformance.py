"""__DIST__ passes the conformance kit's channel checks.

The checks that need a message from the service skip until these tests say how to send the bot
one through a fake of the service (`say`) and what the bot shows (`shown`): see
packages/lnk-telegram/tests/test_conformance.py.
"""

from __future__ import annotations

from link_conformance import ChannelConformance


class Test__CLASS__(ChannelConformance):
    plugin = "__SCRIPT__"
    bridge_secrets = {"token": "not-a-real-token"}
