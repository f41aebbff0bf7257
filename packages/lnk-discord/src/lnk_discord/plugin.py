"""lnk-discord as a channel plugin: describe, connect, bridge, state, disconnect."""

from __future__ import annotations

from link_plugin.channel import BridgeSpec, ChannelState, Connected, Describe, SecretField
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, ChannelPlugin
from lnk_discord import __version__, connect
from lnk_discord.api import HOSTS
from lnk_discord.bridge import DiscordBridge
from lnk_discord.connect import BOT_TOKEN


class Discord(ChannelPlugin):
    name = "discord"
    release = __version__

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(
            title="Discord",
            secrets=[SecretField(name=BOT_TOKEN.name, prompt=BOT_TOKEN.prompt)],
            device=False,
            hosts=HOSTS,
        )

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> Connected:
        return connect.run(token_stdin, ctx.taken)

    async def bridge(self, spec: BridgeSpec) -> None:
        await DiscordBridge(spec).run()

    def state(self, ctx: ChannelContext) -> ChannelState:
        """Nothing to carry on a move: the token is in Link's keys, the owner in the settings."""
        return ChannelState()

    def disconnect(self, ctx: ChannelContext) -> Done:
        return Done(ok=True, detail="nothing kept by lnk-discord: Link forgets the token and the owner")
