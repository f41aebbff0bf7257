"""lnk-whatsapp as a channel plugin: describe, connect, bridge, link, state, disconnect.

The bridge, `connect` and `link` (with the engine's client and the QR code) are loaded by the
commands that use them: `contract`, `describe` and `state` answer without them."""

from __future__ import annotations

from link_plugin.channel import BridgeSpec, ChannelState, Connected, Describe
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, ChannelPlugin
from lnk_whatsapp import __version__
from lnk_whatsapp.section import DEVICE, TITLE

HOSTS = ["web.whatsapp.com", "g.whatsapp.net", "mmg.whatsapp.net", "media.fna.whatsapp.net"]
"""WhatsApp Web's socket, and where media and link previews come from."""
STATE = [DEVICE, f"{DEVICE}-wal", f"{DEVICE}-shm"]


class WhatsApp(ChannelPlugin):
    name = "whatsapp"
    release = __version__

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(title=TITLE, secrets=[], device=True, hosts=HOSTS)

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> Connected:
        from lnk_whatsapp import connect

        return connect.run(ctx, token_stdin)

    async def bridge(self, spec: BridgeSpec) -> None:
        from lnk_whatsapp.bridge import WhatsAppBridge

        await WhatsAppBridge(spec).run()

    def link(self, ctx: ChannelContext) -> Done:
        from lnk_whatsapp import connect

        account = connect.link_here(ctx)
        return Done(ok=True, detail=f"linked to +{account}, kept in {connect.folder(ctx)}")

    def state(self, ctx: ChannelContext) -> ChannelState:
        """The linked device (its keys and sessions), which a move carries; the agent it left deletes its copy."""
        return ChannelState(paths=STATE)

    def disconnect(self, ctx: ChannelContext) -> Done:
        from lnk_whatsapp import connect

        place = connect.folder(ctx)
        connect.forget(place)
        return Done(
            ok=True,
            detail=f"the device's keys are deleted from {place}; remove it on the phone too: "
            "WhatsApp, Settings, Linked devices",
        )
