"""The real `lnk-whatsapp engine` (neonize, whatsmeow inside it), the twin of the tests' fake
engine, run where it has no network: a network namespace of its own (bubblewrap), holding only
a loopback, so nothing it tries leaves this machine.

What this proves without WhatsApp: neonize's wheel loads and its Go library answers (`ping` says
the library's own version); the engine speaks the protocol's lines, and only them, on stdout;
whatsmeow's device store is made in the channel's folder, 0700, its file 0600; the engine tries
to connect to WhatsApp Web and says why it can't (`disconnected`); a send, typing or a pair code
asked while unconnected is refused as safe to ask again (`again`), which is what the bridge
retries on; closing stdin ends it; and what it reads of a message, from whatsmeow's own message
shapes (protobuf), handed to the engine as neonize hands them. What it can't prove here: a QR or
pair code, linking, a message received or sent over the network; those need WhatsApp's servers,
and the bridge's side of each is tested against the fake engine speaking the same lines.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lnk_whatsapp.protocol import Event, Reply, Request, line, parse
from lnk_whatsapp.section import DEVICE

offline = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) makes the engine a network of its own; it isn't here"
)

OWNER_CHAT = "15550001234@s.whatsapp.net"


def _engine(folder: Path, *requests: Request) -> tuple[list[Reply | Event], str, int]:
    """Run the real engine on `folder` with no network, give it `requests`, and read what it says
    until every one is answered and it said why it can't connect; then close its stdin."""
    process = subprocess.Popen(
        ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", sys.executable, "-m", "lnk_whatsapp"]
        + ["engine", str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=folder.anchor,  # not the tests folder: nothing there may shadow a module
    )
    assert process.stdin is not None and process.stdout is not None
    for request in requests:
        process.stdin.write(line(request))
    process.stdin.flush()
    said: list[Reply | Event] = []
    try:
        while not (
            {r.id for r in said if isinstance(r, Reply)} == {r.id for r in requests}
            and any(isinstance(e, Event) and e.event == "disconnected" for e in said)
        ):
            raw = process.stdout.readline()
            assert raw, f"the engine ended: {process.stderr.read().decode() if process.stderr else ''}"
            said.append(parse(raw))  # every line on stdout is the protocol's
    finally:
        process.stdin.close()
    code = process.wait(timeout=20)
    rest = process.stdout.read()
    assert process.stderr is not None
    return said, process.stderr.read().decode() + rest.decode(), code


@offline
def test_the_real_engine_starts_answers_and_keeps_its_device_in_the_folder_offline(tmp_path: Path) -> None:
    folder = tmp_path / "channels" / "whatsapp"
    said, _, code = _engine(
        folder,
        Request(id=1, op="ping"),
        Request(id=2, op="send", chat=OWNER_CHAT, text="hello", ref="c:0"),
        Request(id=3, op="typing", chat=OWNER_CHAT),
        Request(id=4, op="pair", phone="15550001234"),
    )
    replies = {r.id: r for r in said if isinstance(r, Reply)}
    assert replies[1].ok and replies[1].version == "0.5.2", "neonize's Go library loaded and answered"
    for refused in (2, 3, 4):
        assert not replies[refused].ok and replies[refused].again, f"unconnected, safe to ask again: {replies[refused]}"
    (why, *_) = [e.why for e in said if isinstance(e, Event) and e.event == "disconnected"]
    assert why and "web.whatsapp.com" in why, "it tried WhatsApp Web, and says why it can't reach it"
    assert code == 0, "stdin closed: it ended"

    assert folder.stat().st_mode & 0o777 == 0o700
    device = folder / DEVICE
    assert device.stat().st_mode & 0o777 == 0o600
    tables = {row[0] for row in sqlite3.connect(device).execute("select name from sqlite_master where type='table'")}
    assert {"whatsmeow_device", "whatsmeow_sessions", "whatsmeow_identity_keys"} <= tables, "whatsmeow's own store"


@offline
def test_nothing_but_the_protocol_reaches_stdout(tmp_path: Path) -> None:
    said, stderr, _ = _engine(tmp_path / "whatsapp", Request(id=1, op="send", chat=OWNER_CHAT, text="x"))
    assert said, "lines, each a reply or an event (parse raised on anything else)"
    assert "Error sending message" in stderr, "what the Go library prints goes to stderr"


# --- what the engine reads of a message, from whatsmeow's own shapes ---------------------------


class _Said(list[Reply | Event]):
    """The engine's stdout, kept: each line parsed as the bridge would."""

    def write(self, model: Reply | Event) -> None:
        self.append(parse(line(model)))


def _received(sender: str, chat: str, *, group: bool = False, mine: bool = False, **content: Any) -> Any:
    """A message as whatsmeow hands it to neonize (`MessageEv`)."""
    from neonize.proto.Neonize_pb2 import JID, MessageInfo, MessageSource
    from neonize.proto.Neonize_pb2 import Message as Received
    from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import Message as Content

    def jid(value: str) -> JID:
        user, _, server = value.partition("@")
        return JID(User=user, Server=server, IsEmpty=False)

    alternative = content.pop("alternative", None)
    source = MessageSource(Chat=jid(chat), Sender=jid(sender), IsFromMe=mine, IsGroup=group)
    if alternative:
        source.SenderAlt.CopyFrom(jid(alternative))
    return Received(
        Info=MessageInfo(MessageSource=source, ID=content.pop("id", "3EB0FEED")), Message=Content(**content)
    )


def _reading(tmp_path: Path) -> tuple[Any, _Said]:
    from lnk_whatsapp.engine import Engine

    said = _Said()
    engine = Engine(tmp_path, said)  # type: ignore[arg-type]
    engine.me = [ACCOUNT_NUMBER, ACCOUNT_HIDDEN]  # as `ready` sets it
    return engine, said


ACCOUNT_NUMBER = "15550000100"
ACCOUNT_HIDDEN = "900000000100"


def test_a_group_mention_by_hidden_id_is_read_with_the_senders_number(tmp_path: Path) -> None:
    from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import ContextInfo, ExtendedTextMessage

    engine, said = _reading(tmp_path)
    text = ExtendedTextMessage(
        text=f"@{ACCOUNT_HIDDEN} what's up?",
        contextInfo=ContextInfo(mentionedJID=[f"{ACCOUNT_HIDDEN}@lid"], stanzaID="3EB0BEEF"),
    )
    engine.received(
        None,
        _received(
            "777@lid", "1203@g.us", group=True, alternative="15550001234@s.whatsapp.net", extendedTextMessage=text
        ),
    )
    (event,) = said
    assert isinstance(event, Event) and event.message is not None
    read = event.message
    assert (read.sender, read.chat, read.group) == ("15550001234", "1203@g.us", True), "the number, not the hidden id"
    assert read.mentions == [ACCOUNT_HIDDEN] and read.quoted == "3EB0BEEF"
    assert read.text == f"@{ACCOUNT_HIDDEN} what's up?"


def test_a_photo_has_no_text_and_the_owners_words_to_others_are_never_read(tmp_path: Path) -> None:
    from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import ImageMessage

    engine, said = _reading(tmp_path)
    engine.received(
        None, _received("15550001234@s.whatsapp.net", "15550001234@s.whatsapp.net", imageMessage=ImageMessage())
    )
    engine.received(
        None,
        _received(
            f"{ACCOUNT_NUMBER}@s.whatsapp.net", "15550009999@s.whatsapp.net", mine=True, conversation="to a friend"
        ),
    )
    engine.received(
        None,
        _received(
            f"{ACCOUNT_NUMBER}@s.whatsapp.net",
            f"{ACCOUNT_NUMBER}@s.whatsapp.net",
            mine=True,
            conversation="to myself",
            id="3EB0SELF",
        ),
    )
    photo, own = [e.message for e in said if isinstance(e, Event)]
    assert photo is not None and photo.text is None
    assert own is not None and (own.text, own.chat) == ("to myself", f"{ACCOUNT_NUMBER}@s.whatsapp.net"), (
        "only its chat with itself"
    )
