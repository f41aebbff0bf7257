"""The bridge carries the owner's messages to the harness and answers back, where Discord differs
(what every channel shares is in test_scenarios.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from conftest import GROUP, OWNER, STRANGER, spec
from lnk_discord.api import intents

from link_plugin.bridge.base import EDITED, UNSUPPORTED
from lnk_testing.background import Background
from lnk_testing.discord import FakeDiscord
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness

Start = Callable[..., Background]


def test_the_owners_message_is_carried_with_the_headers_and_answered(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    sent = discord.dm(OWNER, "hello there")
    discord.wait(lambda: discord.texts(OWNER.dm) == ["you said: hello there"])
    (received,) = harness.received
    assert received.thread == f"discord:{OWNER.dm}"
    assert received.key == str(sent), "its key: Discord's id of the message"
    assert received.headers["link-agent"] == AGENT.name
    assert received.headers["link-agent-id"] == AGENT.id
    assert received.text == "hello there"
    assert OWNER.dm in discord.typing, "typing shows while the answer comes"


def test_the_gateway_is_asked_for_direct_messages_and_server_messages_only(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    (asked,) = discord.identified
    assert asked == intents().value == (1 << 12) | (1 << 9), "DIRECT_MESSAGES and GUILD_MESSAGES, nothing else"
    assert not asked & (1 << 15), "no message content intent: Discord gives a bot its mentions' text without it"


def test_the_owners_mention_in_a_server_is_answered_there(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    asked = discord.guild(GROUP, OWNER, "what's up?", mention=True)
    discord.wait(lambda: discord.texts(GROUP) == ["you said: what's up?"])
    assert discord.messages(GROUP)[0].reply_to == asked, "answered as a reply to the owner's message"
    assert [r.thread for r in harness.received] == [f"discord:{GROUP}"]


def test_in_a_server_only_the_owners_mention_is_carried(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    discord.guild(GROUP, OWNER, "hello bot", mention=True)
    discord.wait(lambda: discord.texts(GROUP) == ["you said: hello bot"])
    bot_message = discord.messages(GROUP)[0].id
    discord.guild(GROUP, OWNER, "no mention here")
    discord.guild(GROUP, OWNER, "thanks", reply_to=bot_message)
    discord.guild(GROUP, STRANGER, "me too?", mention=True)
    discord.dm(OWNER, "and in private")
    discord.wait(lambda: discord.texts(OWNER.dm) == ["you said: and in private"])
    assert [r.text for r in harness.received] == ["hello bot", "and in private"], "a reply without a mention is not"
    assert discord.texts(GROUP) == ["you said: hello bot"]


def test_attachments_and_edits_get_a_short_reply_and_nothing_breaks(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    discord.dm(OWNER, "", attachment=True)
    discord.wait(lambda: discord.texts(OWNER.dm) == [UNSUPPORTED])
    first = discord.dm(OWNER, "typo")
    discord.wait(lambda: len(discord.texts(OWNER.dm)) == 2)
    discord.edit(OWNER, first, "fixed")
    discord.wait(lambda: discord.texts(OWNER.dm)[-1] == EDITED)
    discord.dm(OWNER, "still here?")
    discord.wait(lambda: discord.texts(OWNER.dm)[-1] == "you said: still here?")
    assert [r.text for r in harness.received] == ["typo", "still here?"]


def test_a_message_that_steers_is_marked_and_answered_on_the_first(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge(spec(harness, discord, steered="👀"))
    hold = threading.Event()
    harness.script = lambda text: Answer(["thinking about ", text], hold=hold if text == "first" else None)
    discord.dm(OWNER, "first")
    discord.wait(lambda: len(harness.received) == 1)
    second = discord.dm(OWNER, "second")
    discord.wait(lambda: len(harness.received) == 2)
    hold.set()
    discord.wait(lambda: discord.texts(OWNER.dm) == ["thinking about first (and: second)"])
    assert harness.received[1].steered
    discord.wait(lambda: discord.reactions(OWNER.dm, second) == ["👀"])


def test_discord_asking_to_reconnect_loses_nothing(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    bridge()
    discord.reconnect()
    discord.wait(lambda: discord.resumed == 1 and discord.connections == 1)
    discord.dm(OWNER, "after the resume")
    discord.wait(lambda: discord.texts(OWNER.dm) == ["you said: after the resume"])


def test_a_reset_token_ends_the_bridge_saying_what_to_do(
    discord: FakeDiscord, harness: ScriptedHarness, bridge: Start
) -> None:
    revoked = spec(harness, discord)
    revoked.secrets["bot-token"] = "MTExMTExMTExMTExMTExMTEx.GAAAAA.reset-token-00000000000000000000"
    running = bridge(revoked)
    running.wait()
    assert running.error is not None and "refused the bot token" in str(running.error)
    assert "reset-token" not in str(running.error)
