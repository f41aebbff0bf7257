"""`lnk-whatsapp engine <folder>`: the one process that speaks WhatsApp, driven over JSON lines.

It runs neonize (whatsmeow, WhatsApp Web's protocol in Go, inside neonize's wheel) linked as a
device whose state is `device.sqlite3` in the channel's folder (0700), and speaks
`lnk_whatsapp.protocol` on its stdin and stdout: requests in, replies and events out. Nothing
else imports neonize, so the bridge and `connect` are tested against a fake engine, and this
module against the real library (as far as it goes without a network).

Its stdout is the protocol alone: the real one is kept on a descriptor of its own and descriptor 1
is pointed at stderr, so nothing neonize or Go print can break a line.

It connects on its own and keeps connecting (whatsmeow reconnects a dropped connection; a first
connect that fails is tried again with backoff), so requests that need no network (`ping`) are
answered at once, and one that does fails with `again` while it is away. Each request is handled
on a thread of its own, since neonize's calls block.

What it reads of a message: the sender as a phone number (WhatsApp names some senders by a hidden
id, with their number beside it), its text (or none, for a photo or a voice note), whom it
mentions, the message it replies to, and whether it is an edit. The account's own messages are
passed on only in its chat with itself ("Message yourself"), where an owner who linked their own
number writes to the agent, and never those the engine sent.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import IO, Any

from link_plugin.backoff import Backoff
from lnk_whatsapp.protocol import Event, Message, Reply, Request, line
from lnk_whatsapp.section import DEVICE
from lnk_whatsapp.sent import FILE as SENT
from lnk_whatsapp.sent import SentNotes

QUOTABLE = 256
"""Messages received that a reply can still quote (WhatsApp shows the quoted text from the message)."""
OWN = 1024
"""Ids of messages the engine sent, so their echo in the account's own chat isn't taken for the owner's."""


class Lines:
    """The protocol's stdout: one whole line at a time, whichever thread writes."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._lock = threading.Lock()

    def write(self, model: Reply | Event) -> None:
        with self._lock:
            self._out.write(line(model))
            self._out.flush()


def protocol_stdout() -> IO[bytes]:
    """The real stdout for the protocol; descriptor 1 from now on writes to stderr."""
    kept = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(kept, "wb", buffering=0)


def prepare(folder: Path) -> None:
    """The channel's folder, the owner's alone: the device's keys read and send as the account.
    Whatever the engine writes there is its owner's alone too."""
    os.umask(0o077)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.chmod(0o700)


class Engine:
    def __init__(self, folder: Path, out: Lines) -> None:
        from neonize.client import NewClient

        self._folder = folder
        self._out = out
        self._client = NewClient(str(folder / DEVICE))
        self._sent = SentNotes(folder / SENT)
        self._quotable: OrderedDict[str, Any] = OrderedDict()
        self._own: OrderedDict[str, None] = OrderedDict()
        self.me: list[str] = []
        """The account's number and hidden id, once connected."""
        self._stopping = threading.Event()
        self._listen()

    # --- events ---------------------------------------------------------------------------------

    def _listen(self) -> None:
        from neonize.events import ConnectedEv, DisconnectedEv, LoggedOutEv, MessageEv, PairStatusEv

        client = self._client
        client.qr(lambda _, code: self._out.write(Event(event="qr", code=code.decode(errors="replace"))))
        client.event(ConnectedEv)(lambda _, __: self._ready())
        client.event(DisconnectedEv)(lambda _, __: self._out.write(Event(event="disconnected")))
        client.event(LoggedOutEv)(lambda _, ev: self._out.write(Event(event="logged_out", why=str(ev.Reason))))
        client.event(PairStatusEv)(self._paired)
        client.event(MessageEv)(self.received)

    def _ready(self) -> None:
        me = self._client.get_me()
        self.me = [jid.User for jid in (me.JID, me.LID) if jid.User]
        self._out.write(Event(event="ready", me=self.me))

    def _paired(self, _: object, status: Any) -> None:
        from neonize.proto.Neonize_pb2 import PairStatus

        if status.Status == PairStatus.SUCCESS:
            self._out.write(Event(event="linked", me=[status.ID.User]))
        else:
            self._out.write(Event(event="disconnected", why=f"linking failed: {status.Error}"))

    def received(self, _: object, received: Any) -> None:
        """A message whatsmeow received (neonize's `MessageEv`), passed on as a `message` event."""
        info = received.Info
        source = info.MessageSource
        if source.IsFromMe and (info.ID in self._own or source.Chat.User not in self.me):
            return  # the engine's own answers, and what the account's owner writes to others
        self._quotable[info.ID] = received
        while len(self._quotable) > QUOTABLE:
            self._quotable.popitem(last=False)
        self._out.write(Event(event="message", message=self._read(received)))

    def _read(self, received: Any) -> Message:
        info = received.Info
        source = info.MessageSource
        content = received.Message
        extended = content.extendedTextMessage
        text: str | None = content.conversation or extended.text or None
        context = extended.contextInfo
        return Message(
            id=info.ID,
            chat=_jid(source.Chat),
            sender=self._number(source.Sender, source.SenderAlt),
            group=source.IsGroup,
            text=text,
            mentions=[mention.split("@")[0] for mention in context.mentionedJID],
            quoted=context.stanzaID or None,
            edited=bool(received.IsEdit),
        )

    def _number(self, sender: Any, alternative: Any) -> str:
        """A sender's phone number: WhatsApp may name them by a hidden id (`@lid`) instead."""
        if sender.Server != "lid":
            return str(sender.User)
        if alternative.User and alternative.Server == "s.whatsapp.net":
            return str(alternative.User)
        try:
            return str(self._client.get_pn_from_lid(sender).User or sender.User)
        except Exception:
            return str(sender.User)

    # --- requests -------------------------------------------------------------------------------

    def handle(self, request: Request) -> Reply:
        try:
            return self._do(request)
        except Exception as exc:
            return self._failed(request, exc)

    def _failed(self, request: Request, exc: Exception) -> Reply:
        said = f"{type(exc).__name__}: {exc}"
        if "rate-overlimit" in said or "429" in said:
            return Reply(id=request.id, ok=False, error=said, retry_after=5.0)
        connected = False
        try:
            connected = bool(self._client.is_connected)
        except Exception:
            connected = False
        return Reply(id=request.id, ok=False, error=said, again=not connected)

    def _do(self, request: Request) -> Reply:
        from neonize.utils.enum import ChatPresence, ChatPresenceMedia

        client = self._client
        if request.op == "ping":
            return Reply(id=request.id, ok=True, version=_library_version())
        if request.op == "pair":
            code = client.PairPhone(_required(request.phone, "phone"), show_push_notification=True)
            return Reply(id=request.id, ok=True, code=code)
        if request.op == "logout":
            client.logout()
            return Reply(id=request.id, ok=True)
        chat = _to_jid(_required(request.chat, "chat"))
        if request.op == "typing":
            client.send_chat_presence(
                chat, ChatPresence.CHAT_PRESENCE_COMPOSING, ChatPresenceMedia.CHAT_PRESENCE_MEDIA_TEXT
            )
            return Reply(id=request.id, ok=True)
        if request.op == "send":
            return self._send(request, chat)
        if request.op == "edit":
            from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import Message as Content

            text = _required(request.text, "text")
            client.edit_message(chat, _required(request.message, "message"), Content(conversation=text))
            return Reply(id=request.id, ok=True)
        # react: the last op
        reaction = client.build_reaction(
            chat,
            _to_jid(_required(request.sender, "sender")),
            _required(request.message, "message"),
            _required(request.emoji, "emoji"),
        )
        client.send_message(chat, reaction)
        return Reply(id=request.id, ok=True)

    def _send(self, request: Request, chat: Any) -> Reply:
        ref = request.ref
        if ref is not None and (before := self._sent.get(ref)) is not None:
            return Reply(id=request.id, ok=True, message=before)
        text = _required(request.text, "text")
        quoted = self._quotable.get(request.quote) if request.quote else None
        content = self._client.build_reply_message(text, quoted) if quoted is not None else text
        sent = self._client.send_message(chat, content)
        self._own[sent.ID] = None
        while len(self._own) > OWN:
            self._own.popitem(last=False)
        if ref is not None:
            self._sent.add(ref, sent.ID)
        return Reply(id=request.id, ok=True, message=sent.ID)

    # --- running --------------------------------------------------------------------------------

    def connect_while_running(self) -> None:
        """Connect, and again with backoff each time a first connect fails (no network)."""
        backoff = Backoff(1.0, 60.0)
        while not self._stopping.is_set():
            try:
                self._client.connect()
            except Exception as exc:
                self._out.write(Event(event="disconnected", why=f"{type(exc).__name__}: {exc}"))
            if self._stopping.wait(backoff.next()):
                return

    def stop(self) -> None:
        self._stopping.set()
        try:
            self._client.stop()
        except Exception as exc:
            print(f"stopping the WhatsApp client: {exc}", file=sys.stderr)


def _library_version() -> str:
    """The version the loaded Go library (whatsmeow's, in neonize's wheel) says it is: it answers."""
    from neonize._binder import gocode

    return str(gocode.GetVersion().decode())


def _required(value: str | None, name: str) -> str:
    if not value:
        raise ValueError(f"the request names no {name}")
    return value


def _jid(jid: Any) -> str:
    return f"{jid.User}@{jid.Server}"


def _to_jid(value: str) -> Any:
    from neonize.utils.jid import build_jid

    user, _, server = value.partition("@")
    return build_jid(user, server or "s.whatsapp.net")


def serve(folder: Path) -> int:
    """Speak the protocol until stdin closes."""
    # A SIGTERM to the agent's process group lets the bridge show the answers it is showing first;
    # the bridge ends the engine after them by closing its stdin (and kills it if it must).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    out = Lines(protocol_stdout())
    prepare(folder)
    engine = Engine(folder, out)
    threading.Thread(target=engine.connect_while_running, name="connect", daemon=True).start()
    try:
        for raw in sys.stdin.buffer:
            if not raw.strip():
                continue
            try:
                request = Request.model_validate_json(raw)
            except ValueError as exc:
                print(f"not a request: {exc}", file=sys.stderr)
                continue
            threading.Thread(target=lambda r=request: out.write(engine.handle(r)), daemon=True).start()
    finally:
        engine.stop()
        time.sleep(0.1)  # let a reply being written go out
    return 0
