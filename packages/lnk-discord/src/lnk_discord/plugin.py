"""lnk-discord as a channel plugin: describe, connect, bridge, state, disconnect.

discord.py and aiohttp are loaded by `connect` and `bridge` alone: what Link asks without them
(`contract`, `describe`, `state`, `disconnect`) answers without them."""

from __future__ import annotations

from link_plugin.channel import BridgeSpec, ChannelState, Connected, Describe, SecretField
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, ChannelPlugin
from lnk_discord import __version__
from lnk_discord.section import BOT_TOKEN, TITLE

HOSTS = ["discord.com", "gateway.discord.gg"]
"""Discord's REST API and its Gateway, the two hosts a bridge and `connect` reach."""


class Discord(ChannelPlugin):
    name = "discord"
    release = __version__

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(
            title=TITLE,
            secrets=[SecretField(name=BOT_TOKEN.name, prompt=BOT_TOKEN.prompt)],
            device=False,
            hosts=HOSTS,
        )

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> Connected:
        from lnk_discord import connect

        return connect.run(token_stdin, ctx.taken)

    async def bridge(self, spec: BridgeSpec) -> None:
        from lnk_discord.bridge import DiscordBridge

        await DiscordBridge(spec).run()

    def state(self, ctx: ChannelContext) -> ChannelState:
        """Nothing to carry on a move: the token is in Link's keys, the owner in the settings."""
        return ChannelState()

    def disconnect(self, ctx: ChannelContext) -> Done:
        return Done(ok=True, detail="nothing kept by lnk-discord: Link forgets the token and the owner")
