"""lnk-telegram as a channel plugin: describe, connect, bridge, state, disconnect.

python-telegram-bot is loaded by `connect` and `bridge` alone: what Link asks without them
(`contract`, `describe`, `state`, `disconnect`) answers without it."""

from __future__ import annotations

from link_plugin.channel import BridgeSpec, ChannelState, Connected, Describe, SecretField
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, ChannelPlugin
from lnk_telegram import __version__
from lnk_telegram.section import SECRET

HOST = "api.telegram.org"
"""The one host a bridge and `connect` reach: Telegram's Bot API."""


class Telegram(ChannelPlugin):
    name = "telegram"
    release = __version__

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(
            title="Telegram",
            secrets=[SecretField(name=SECRET, prompt="Bot token (from @BotFather)")],
            device=False,
            hosts=[HOST],
        )

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> Connected:
        from lnk_telegram import connect

        return connect.run(token_stdin, ctx.taken)

    async def bridge(self, spec: BridgeSpec) -> None:
        from lnk_telegram.bridge import TelegramBridge

        await TelegramBridge(spec).run()

    def state(self, ctx: ChannelContext) -> ChannelState:
        """Nothing to carry on a move: the token is in Link's keys, the owner in the settings."""
        return ChannelState()

    def disconnect(self, ctx: ChannelContext) -> Done:
        return Done(ok=True, detail="nothing kept by lnk-telegram: Link forgets the token and the owner")
