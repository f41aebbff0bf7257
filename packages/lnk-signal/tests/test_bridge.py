"""The bridge carries the owner's messages to the harness and answers back, where Signal differs
(what every channel shares is in test_scenarios.py): signal-cli run over JSON-RPC on stdio, the
owner known by number or by their Signal id, a group's mention answered quoting it, typing, the
steered mark as a reaction, Java's proxy properties, and a signal-cli that dies started again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import OWNER, STRANGER, spec
from lnk_signal.messages import group_chat

from link_plugin.bridge.base import EDITED, UNSUPPORTED
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness
from lnk_testing.signal_cli import ACCOUNT, GROUP, FakeSignal

Start = Callable[..., Background]


def test_the_owners_message_is_carried_with_the_headers_and_answered(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start, folder: Path
) -> None:
    bridge()
    sent = signal.dm(OWNER, "hello there")
    signal.wait(lambda: signal.texts(OWNER.number) == ["you said: hello there"])
    (received,) = harness.received
    assert received.thread == f"signal:{OWNER.number}"
    assert received.key == sent == f"{OWNER.uuid}:{sent.split(':')[1]}", "its key: the sender and Signal's timestamp"
    assert received.headers["link-agent"] == AGENT.name
    assert received.text == "hello there"
    assert OWNER.number in signal.typing, "typing shows while the answer comes"
    (started,) = signal.started
    assert started.argv[-1] == "jsonRpc", "JSON-RPC on stdin and stdout, never the HTTP daemon"
    assert started.option("-a") == ACCOUNT.number
    assert started.option("--config") == str(folder / "device"), "the device lives in the channel's folder"


def test_the_owner_is_known_by_their_signal_id_when_they_share_no_number(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    signal.dm(OWNER, "number hidden", hidden=True)
    signal.wait(lambda: signal.texts(OWNER.number) == ["you said: number hidden"])
    assert [r.thread for r in harness.received] == [f"signal:{OWNER.number}"], "the same conversation"


def test_the_owners_mention_in_a_group_is_answered_there_quoting_it(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    asked = signal.group(OWNER, "what's up?", mention=True)
    signal.wait(lambda: signal.texts(GROUP) == ["you said: what's up?"])
    (answer,) = signal.messages(GROUP)
    assert answer.quote == (OWNER.number, int(asked.split(":")[1])), "the answer quotes the owner's message"
    (received,) = harness.received
    assert received.thread == f"signal:{group_chat(GROUP)}" and received.text == "what's up?", "the mention taken out"
    assert "/" not in received.thread and "+" not in received.thread.split(":")[1], "a safe folder name"


def test_in_a_group_only_the_owners_mention_is_carried(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    signal.group(OWNER, "hello agent", mention=True)
    signal.wait(lambda: signal.texts(GROUP) == ["you said: hello agent"])
    answer = signal.messages(GROUP)[0].timestamp
    signal.group(OWNER, "no mention here")
    signal.group(OWNER, "thanks", quote=answer)
    signal.group(STRANGER, "me too?", mention=True)
    signal.dm(STRANGER, "let me in")
    signal.dm(OWNER, "and in private")
    signal.wait(lambda: signal.texts(OWNER.number) == ["you said: and in private"])
    assert [r.text for r in harness.received] == ["hello agent", "and in private"], "a quote without a mention is not"
    assert signal.texts(GROUP) == ["you said: hello agent"]
    assert signal.texts(STRANGER.number) == [] and STRANGER.number not in signal.typing


def test_attachments_and_edits_get_a_short_reply_and_nothing_breaks(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    signal.dm(OWNER, "", attachment=True)
    signal.wait(lambda: signal.texts(OWNER.number) == [UNSUPPORTED])
    first = signal.dm(OWNER, "typo")
    signal.wait(lambda: len(signal.texts(OWNER.number)) == 2)
    signal.edit(OWNER, first, "fixed")
    signal.wait(lambda: signal.texts(OWNER.number)[-1] == EDITED)
    signal.dm(OWNER, "still here?")
    signal.wait(lambda: signal.texts(OWNER.number)[-1] == "you said: still here?")
    assert [r.text for r in harness.received] == ["typo", "still here?"]


def test_a_message_that_steers_gets_the_mark_as_a_reaction(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start, folder: Path
) -> None:
    bridge(spec(harness, folder, steered="👀"))
    hold = threading.Event()
    harness.script = lambda text: Answer(["thinking about ", text], hold=hold if text == "first" else None)
    signal.dm(OWNER, "first")
    signal.wait(lambda: len(harness.received) == 1)
    second = signal.dm(OWNER, "second")
    signal.wait(lambda: len(harness.received) == 2)
    hold.set()
    signal.wait(lambda: signal.texts(OWNER.number) == ["thinking about first (and: second)"])
    signal.wait(lambda: signal.reactions.get((OWNER.number, int(second.split(":")[1]))) == ["👀"])


def test_a_signal_cli_that_dies_is_started_again_and_nothing_is_lost_or_repeated(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    first = signal.dm(OWNER, "before")
    signal.wait(lambda: signal.texts(OWNER.number) == ["you said: before"])
    signal.crash()
    signal.dm(OWNER, "while it was down")  # Signal holds it for the device
    signal.wait(lambda: signal.connections == 1)
    signal.replay(first)  # what the dead one had received comes again from the new one
    signal.wait(lambda: signal.texts(OWNER.number) == ["you said: before", "you said: while it was down"])
    time.sleep(0.5)
    assert [r.text for r in harness.received] == ["before", "while it was down"], "each carried once"
    assert len(signal.started) == 2


def test_an_answer_whose_signal_cli_died_is_sent_by_the_next(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start
) -> None:
    hold = threading.Event()
    harness.script = lambda text: Answer(["answered after all"], hold=hold)
    bridge()
    signal.dm(OWNER, "slow one")
    signal.wait(lambda: len(harness.received) == 1)
    signal.crash()
    hold.set()  # the answer is done while signal-cli is starting again: it waits for it
    signal.wait(lambda: signal.texts(OWNER.number) == ["answered after all"])
    assert len(signal.started) == 2
    assert [c.status for c in signal.called("send")] == [200], "sent once, by the new signal-cli"


def test_javas_proxy_properties_come_from_links_proxy(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LNK_PROXY", "http://127.0.0.1:18899")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    bridge()
    options = signal.started[0].env["JAVA_OPTS"].split()
    for scheme in ("http", "https"):
        assert f"-D{scheme}.proxyHost=127.0.0.1" in options and f"-D{scheme}.proxyPort=18899" in options
    assert "-Dhttp.nonProxyHosts=localhost|127.0.0.1" in " ".join(options)


def test_without_a_proxy_java_is_told_none(signal: FakeSignal, harness: ScriptedHarness, bridge: Start) -> None:
    bridge()
    assert "JAVA_OPTS" not in signal.started[0].env


def test_a_device_removed_on_the_phone_ends_the_bridge_saying_what_to_do(
    signal: FakeSignal, harness: ScriptedHarness, bridge: Start
) -> None:
    running = bridge()
    signal.unlinked.add(ACCOUNT.number)
    signal.crash()
    running.wait(20)
    assert running.error is not None and "no longer knows this device" in str(running.error)
    assert "lnk agent connect signal" in str(running.error)
