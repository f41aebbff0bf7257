"""lnk-whatsapp as a channel plugin: describe, connect, bridge, link, state, disconnect."""

from __future__ import annotations

from link_plugin.channel import BridgeSpec, ChannelState, Connected, Describe
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, ChannelPlugin
from lnk_whatsapp import __version__, connect
from lnk_whatsapp.bridge import WhatsAppBridge
from lnk_whatsapp.engine import DEVICE
from lnk_whatsapp.section import TITLE

HOSTS = ["web.whatsapp.com", "g.whatsapp.net", "mmg.whatsapp.net", "media.fna.whatsapp.net"]
"""WhatsApp Web's socket, and where media and link previews come from."""
STATE = [DEVICE, f"{DEVICE}-wal", f"{DEVICE}-shm"]


class WhatsApp(ChannelPlugin):
    name = "whatsapp"
    release = __version__

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(title=TITLE, secrets=[], device=True, hosts=HOSTS)

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> Connected:
        return connect.run(ctx, token_stdin)

    async def bridge(self, spec: BridgeSpec) -> None:
        await WhatsAppBridge(spec).run()

    def link(self, ctx: ChannelContext) -> Done:
        account = connect.link_here(ctx)
        return Done(ok=True, detail=f"linked to +{account}, kept in {connect.folder(ctx)}")

    def state(self, ctx: ChannelContext) -> ChannelState:
        """The linked device (its keys and sessions), which a move carries; the agent it left deletes its copy."""
        return ChannelState(paths=STATE)

    def disconnect(self, ctx: ChannelContext) -> Done:
        place = connect.folder(ctx)
        connect.forget(place)
        return Done(
            ok=True,
            detail=f"the device's keys are deleted from {place}; remove it on the phone too: "
            "WhatsApp, Settings, Linked devices",
        )
