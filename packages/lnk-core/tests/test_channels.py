"""Channels: connect runs the plugin in the terminal and keeps its section and secrets apart;
the supervisor runs each connected channel's bridge with a BridgeSpec on its stdin."""

from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path

from world import TOOL, World, wait_until

from link_conformance import Reply, ToolCall
from link_plugin.files import read_toml


def _bot(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:12]


def _agent(world: World, name: str) -> None:
    world.lnk("agent", "keys", "set", "openai", name, "--stdin", input=world.key)
    world.lnk("agent", "use", "mini", name)


def _connect(world: World, name: str, token: str, *extra: str, ok: bool = True) -> str:
    chat = world.root / f"chat-{name}"
    world.env["LNK_TEST_CHAT_DIR"] = str(chat)
    done = world.lnk("agent", "connect", "testchan", name, "--token-stdin", *extra, input=token + "\n", ok=ok)
    return done.stderr


def test_connect_keeps_the_section_in_settings_and_the_secret_in_keys(world: World) -> None:
    _agent(world, "work")
    said = _connect(world, "work", "tok-abc123")
    assert "424242" in said  # the plugin's pairing code reached the terminal
    agent = world.agent("work")
    entry = agent.settings.channels["testchan"]
    assert entry["identity"] == f"testchan:{_bot('tok-abc123')}"
    assert entry["section"] == {"chat": str(world.root / "chat-work")}
    assert entry["title"] == "Test chat" and entry["secrets"] == ["token"] and entry["hosts"] == ["chat.invalid"]
    assert "tok-abc123" not in agent.config.settings.read_text()
    assert agent.keys.get("testchan/token") == "tok-abc123"
    given = world.records("connect")[-1]
    assert given == {"agent": "work", "id": agent.id, "folder": str(agent.config.channel("testchan")), "taken": []}
    assert read_toml(agent.config.settings)["channels"]["testchan"]["identity"] == entry["identity"]


def test_the_bridge_carries_messages_to_the_harness_and_is_started_again(world: World) -> None:
    _agent(world, "work")
    _connect(world, "work", "tok-carry1")
    world.start("work")
    spec = wait_until(lambda: world.records("bridge"), what="the bridge starting")[-1]
    agent = world.agent("work")
    run = world.spec("work")
    assert run.endpoint is not None
    assert spec["agent"] == {"name": "work", "id": agent.id, "owner": agent.settings.owner}
    assert spec["endpoint"] == run.endpoint.model_dump(mode="json")
    assert spec["secrets"] == {"token": "tok-carry1"} and spec["section"] == {"chat": str(world.root / "chat-work")}

    chat = world.root / "chat-work"
    (chat / "inbox").mkdir(parents=True, exist_ok=True)
    (chat / "inbox" / "1.txt").write_text("hello from my phone")
    answer = wait_until(lambda: (chat / "outbox" / "1.txt").exists() and (chat / "outbox" / "1.txt").read_text())
    assert answer == "ok"
    assert world.provider.requests[-1].json["messages"][-1]["content"] == "hello from my phone"

    harness = Path(f"/proc/{world.harness_pid('work')}/environ").read_bytes().decode(errors="replace")
    assert "tok-carry1" not in harness  # the channel's token goes to its bridge alone
    assert "testchan" not in world.harness_settings("work").channels  # Link carries it, not the harness

    status = json.loads(world.lnk("agent", "status", "work", "--json").stdout)
    assert status["channels"]["testchan"]["bridge"] == "running"
    bridge = world.state("work", "bridges").children["bridge:testchan"]
    assert bridge.pid is not None
    os.kill(bridge.pid, signal.SIGKILL)
    wait_until(
        lambda: (
            world.state("work", "bridges").children["bridge:testchan"].restarts == 1
            and world.state("work", "bridges").children["bridge:testchan"].state == "running"
        ),
        what="the bridge starting again",
    )
    (chat / "inbox" / "2.txt").write_text("again")
    assert wait_until(lambda: (chat / "outbox" / "2.txt").exists() and (chat / "outbox" / "2.txt").read_text()) == "ok"


def test_a_tool_call_is_asked_in_the_owners_chat(world: World) -> None:
    _agent(world, "work")
    _connect(world, "work", "tok-ask1")
    world.lnk("sandbox", "tool", "add", "words", "--", *TOOL)
    world.start("work")
    assert wait_until(lambda: world.records("bridge"))[-1]["approvals"] == str(world.agent("work").run.control)
    world.provider.script(
        Reply(tool_calls=[ToolCall("erase", {"word": "old"})]),
        lambda recorded: Reply(text=f"The tool said: {recorded.json['messages'][-1]['content']}"),
    )
    chat = world.root / "chat-work"
    (chat / "inbox").mkdir(parents=True, exist_ok=True)  # the bridge may not have made it yet
    (chat / "inbox" / "1.txt").write_text("erase old, please")
    question = wait_until(lambda: list((chat / "outbox").glob("question-*.txt")), what="the question in the chat")
    assert question[0].read_text().startswith("words wants to run erase with")
    assert world.tool_calls() == []  # nothing ran before the owner answered
    (chat / "inbox" / "2.txt").write_text("yes")
    answer = wait_until(lambda: (chat / "outbox" / "1.txt").exists() and (chat / "outbox" / "1.txt").read_text())
    assert answer == "The tool said: erased old"
    assert world.tool_calls() == ["erase old"]
    said = [r.json["messages"][-1].get("content") for r in world.provider.requests]
    assert "yes" not in said  # the owner's answer went to lnk, never to the harness as a message


def test_one_bot_per_agent_and_what_connect_refuses(world: World) -> None:
    for name in ("one", "two"):
        _agent(world, name)
    _connect(world, "one", "tok-shared")
    refused = _connect(world, "two", "tok-shared", ok=False)
    assert "Another agent here has that bot" in refused
    assert world.records("connect")[-1]["taken"] == [f"testchan:{_bot('tok-shared')}"]
    assert "testchan" not in world.agent("two").settings.channels

    bad = _connect(world, "two", "not-a-token", ok=False)
    assert "Tokens look like tok-abc123" in bad
    unknown = world.lnk("agent", "connect", "nosuch", "two", ok=False)
    assert "no channel 'nosuch'" in unknown.stderr and "telegram" in unknown.stderr and "testchan" in unknown.stderr

    world.lnk("agent", "keys", "set", "openai", "quiet", "--stdin", input=world.key)
    world.agent("quiet").with_settings(harness="silent").save()  # a harness with no endpoint, speaking telegram
    cant = world.lnk("agent", "connect", "testchan", "quiet", "--token-stdin", input="tok-q\n", ok=False)
    assert "can't speak testchan" in cant.stderr and "telegram" in cant.stderr


def test_switching_to_a_harness_that_cant_speak_a_channel_says_it_stops_answering(world: World) -> None:
    _agent(world, "work")
    _connect(world, "work", "tok-switch")
    switched = world.lnk("agent", "use", "silent", "work", "--yes").stderr
    said = " ".join(switched.split())
    assert "silent doesn't speak testchan: they stop answering until you switch back." in said
    assert world.agent("work").settings.harness == "silent"
    assert "testchan" in world.agent("work").settings.channels  # kept for the way back
    back = " ".join(world.lnk("agent", "use", "mini", "work", "--yes").stderr.split())
    assert "stop answering" not in back  # mini has an endpoint: Link's bridge carries testchan to it


def test_disconnect_forgets_the_section_and_the_secret(world: World) -> None:
    _agent(world, "work")
    _connect(world, "work", "tok-bye")
    world.lnk("agent", "disconnect", "testchan", "work")
    agent = world.agent("work")
    assert "testchan" not in agent.settings.channels
    assert agent.keys.get("testchan/token") is None
    assert world.records("disconnect") == ["work"]
    again = world.lnk("agent", "disconnect", "testchan", "work", ok=False)
    assert "has no channel 'testchan'" in again.stderr
