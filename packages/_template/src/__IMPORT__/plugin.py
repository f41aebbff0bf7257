"""__DESCRIPTION__: the channel plugin Link asks, as one object (`link_plugin.plugin` makes the
executable from it, see cli.py).

It answers `describe` (what `lnk agent connect __NAME__` asks the owner for) and `bridge`: proving
the harness's endpoint before its key goes out, and handing over the answers the harness kept
while no bridge ran. Carrying messages is the service's part, written here: read each from the
service, send it with `EndpointClient.chat(..., message_id=...)`, show the answer, then
`confirm` the answers recovery handed over once they are shown. The conformance kit's channel
checks (tests/test_conformance.py) say what else a bridge keeps.
"""

from __future__ import annotations

import asyncio

from link_plugin.channel import BridgeSpec, Describe, SecretField
from link_plugin.endpoint import EndpointClient, EndpointError
from link_plugin.plugin import ChannelContext, ChannelPlugin, say
from link_plugin.wire import Undelivered

RETRY = 1.0
"""Seconds between two tries to reach the harness, which may be starting or restarting."""


class __CLASS__(ChannelPlugin):
    name = "__NAME__"

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(title="__DESCRIPTION__", secrets=[SecretField(name="token", prompt="The bot's token")])

    async def bridge(self, spec: BridgeSpec) -> None:
        client = EndpointClient(spec.endpoint, spec.agent)
        kept = await _recovered(client)
        # Here: show each kept answer on the service and confirm it (unconfirmed, the harness keeps
        # it for the next bridge), then carry the service's messages until Link stops the bridge.
        say(f"lnk-{self.name}: {spec.agent.name}'s harness answered; {len(kept)} answers wait to be shown")
        await asyncio.Event().wait()


async def _recovered(client: EndpointClient) -> list[Undelivered]:
    """The answers the harness kept, once it answers: `recover` proves the endpoint before the key
    goes out, so a program that took the harness's port never gets it."""
    while True:
        try:
            return await client.recover()
        except EndpointError:
            await asyncio.sleep(RETRY)
