"""lnk-slack as a channel plugin: describe, connect, bridge, state, disconnect.

slack-sdk and aiohttp are loaded by `connect` and `bridge` alone: what Link asks without them
(`contract`, `describe`, `state`, `disconnect`) answers without them."""

from __future__ import annotations

from link_plugin.channel import BridgeSpec, ChannelState, Connected, Describe, SecretField
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, ChannelPlugin
from lnk_slack import __version__
from lnk_slack.section import APP_TOKEN, BOT_TOKEN, TITLE

HOSTS = ["slack.com", "wss-primary.slack.com", "wss-backup.slack.com"]
"""The Web API, and where Socket Mode connects."""


class Slack(ChannelPlugin):
    name = "slack"
    release = __version__

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(
            title=TITLE,
            secrets=[SecretField(name=token.name, prompt=token.prompt) for token in (APP_TOKEN, BOT_TOKEN)],
            device=False,
            hosts=HOSTS,
        )

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> Connected:
        from lnk_slack import connect

        return connect.run(token_stdin, ctx.taken, ctx.agent)

    async def bridge(self, spec: BridgeSpec) -> None:
        from lnk_slack.bridge import SlackBridge

        await SlackBridge(spec).run()

    def state(self, ctx: ChannelContext) -> ChannelState:
        """Nothing to carry on a move: the tokens are in Link's keys, the owner in the settings."""
        return ChannelState()

    def disconnect(self, ctx: ChannelContext) -> Done:
        return Done(ok=True, detail="nothing kept by lnk-slack: Link forgets the tokens and the owner")
