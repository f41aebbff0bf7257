"""`lnk-signal bridge`: carry the owner's Signal messages to the agent's endpoint and back.

The bridge runs signal-cli (`signal-cli -a <account> jsonRpc`, the device in the channel's
folder) and speaks JSON-RPC with it over its stdin and stdout; what signal-cli hears comes as
`receive` notifications, each handled on its own, so a long answer never holds up the next
message. The owner's direct messages, and their mentions of the agent's account in a group, are
carried, each with its key (`<sender>:<timestamp>`, the same when signal-cli hands it over again:
it is carried once); a group is a conversation of its own (`signal:group.<id>`), answered there
quoting the owner's message. Nobody else's message is carried, a group message that doesn't
mention the account neither, and a stranger gets nothing at all, not even typing.

Signal caps how often a message can be edited, so "typing" shows while an answer is written and
the answer is sent whole once it is done, split past 2,000 characters. A signal-cli that ends
(it crashed, it was killed) is started again with a backoff; a message it held is handed over by
the next one, and a call to it meanwhile is retried, so nothing is lost. One that ends at once
saying the account isn't registered (the device was removed on the phone) ends the bridge, saying
how to link it again. What every channel shares
is `link_plugin.bridge.base.Bridge`; this is Signal's connection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

from link_plugin.backoff import Backoff
from link_plugin.bridge.base import Bridge, Timing
from link_plugin.bridge.pairing import paired
from link_plugin.channel import BridgeSpec
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_signal.chat import SignalChat
from lnk_signal.messages import read
from lnk_signal.program import program
from lnk_signal.rpc import Gone, RpcError, SignalCli
from lnk_signal.section import TITLE, Section

CHANNEL = "signal"
LIMIT = 2000
"""Signal's longest message as Link sends it: longer ones are split."""
STARTING = 120.0
"""Seconds signal-cli may take to start and answer (Java starts slowly on a busy machine)."""
UNREGISTERED = 1
"""signal-cli's exit code for a user's error: as it starts, the account isn't registered here."""

_UNLINKED = LinkError(
    "Signal no longer knows this device: it was removed on the phone (Settings › Linked devices), or its keys are gone",
    "Run `lnk agent connect signal` again to link it.",
)


class SignalBridge(Bridge):
    def __init__(self, spec: BridgeSpec, **timing: Unpack[Timing]) -> None:
        self._section = paired(Section, spec.section, TITLE, CHANNEL)
        super().__init__(spec, CHANNEL, self._section.owner, limit=LIMIT, whole=True, **timing)
        self._home = Path(spec.folder) if spec.folder else None
        self._program = program(self._home)
        self._cli: SignalCli | None = None
        self._backoff = Backoff(0.5, 30.0)

    async def reach(self) -> str:
        await self._start()
        return f"Signal {self._section.account}"

    async def listen(self) -> None:
        """Wait on signal-cli; start it again each time it ends."""
        while True:
            assert self._cli is not None
            code = await self._cli.ended()
            await self.close()
            say(f"signal-cli ended (exit {code}); starting it again")
            await self._backoff.wait()
            await self._start()

    async def close(self) -> None:
        cli, self._cli = self._cli, None
        if cli is not None:
            await cli.close()

    async def _start(self) -> None:
        """A signal-cli that answers, trying again (with a backoff) while it doesn't. It takes calls
        as soon as it runs: what it hears may come before its first answer."""
        argv = self._program.command(self._home, "jsonRpc", account=self._section.account)
        env = self._program.environment()
        while True:
            try:
                self._cli = await SignalCli.start(argv, env, self._receive)
                await self._cli.call("version", timeout=STARTING)
                self._backoff.reset()
                return
            except (Gone, RpcError, TimeoutError) as exc:
                if isinstance(exc, Gone) and self._cli is not None and await self._cli.ended() == UNREGISTERED:
                    await self.close()
                    raise _UNLINKED from None
                say(f"signal-cli doesn't answer ({exc}); trying again")
                await self.close()
            await self._backoff.wait()

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """A request to the signal-cli running now; Gone while it is started again (retried)."""
        cli = self._cli
        if cli is None or not cli.running:
            raise Gone("signal-cli is starting again")
        return await cli.call(method, params)

    def place(self, chat: str) -> SignalChat:
        return SignalChat(self.call, chat)

    def owner_chat(self) -> SignalChat:
        return SignalChat(self.call, self._section.owner)

    def _receive(self, params: dict[str, Any]) -> None:
        envelope = params.get("envelope")
        if not isinstance(envelope, dict):
            return
        heard = read(envelope, self._section)
        if heard is None:
            return
        message = (heard.incoming.sender, int(envelope.get("timestamp") or 0))
        self.spawn(f"message {heard.key}", self.heard(heard, SignalChat(self.call, heard.chat, message)))
