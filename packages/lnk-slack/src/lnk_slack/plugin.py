"""lnk-slack as a channel plugin: describe, connect, bridge, state, disconnect."""

from __future__ import annotations

from link_plugin.channel import BridgeSpec, ChannelState, Connected, Describe, SecretField
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, ChannelPlugin
from lnk_slack import __version__, connect
from lnk_slack.api import HOSTS
from lnk_slack.bridge import SlackBridge
from lnk_slack.connect import APP_TOKEN, BOT_TOKEN


class Slack(ChannelPlugin):
    name = "slack"
    release = __version__

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(
            title="Slack",
            secrets=[SecretField(name=token.name, prompt=token.prompt) for token in (APP_TOKEN, BOT_TOKEN)],
            device=False,
            hosts=HOSTS,
        )

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> Connected:
        return connect.run(token_stdin, ctx.taken, ctx.agent)

    async def bridge(self, spec: BridgeSpec) -> None:
        await SlackBridge(spec).run()

    def state(self, ctx: ChannelContext) -> ChannelState:
        """Nothing to carry on a move: the tokens are in Link's keys, the owner in the settings."""
        return ChannelState()

    def disconnect(self, ctx: ChannelContext) -> Done:
        return Done(ok=True, detail="nothing kept by lnk-slack: Link forgets the tokens and the owner")
