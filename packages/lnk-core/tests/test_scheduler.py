"""Link Scheduler for an agent: its tool defined at each start like memory, its runner beside the
bridges, an answer nobody waits for shown in the owner's chat, and `lnk agent schedules`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from world import World, wait_until

from link_conformance import Reply, ToolCall
from link_conformance.provider import Recorded
from link_plugin.scheduler import ENV_AGENTS, ENV_NARROWS
from lnk.tooldefs import find_tool


def _soon(seconds: float) -> str:
    """A time just ahead, computed as the model asks for it (the start before it takes a while)."""
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def _connect(world: World, name: str) -> None:
    world.lnk("agent", "keys", "set", "openai", name, "--stdin", input=world.key)
    world.env["LNK_TEST_CHAT_DIR"] = str(world.root / f"chat-{name}")
    world.lnk("agent", "connect", "testchan", name, "--token-stdin", input="tok-sched1\n")


def _said(world: World, text: str) -> str:
    """The owner's message in the test chat, and the agent's answer there."""
    chat = world.root / "chat-work"
    (chat / "inbox").mkdir(parents=True, exist_ok=True)
    (chat / "inbox" / "1.txt").write_text(text)
    answer: str = wait_until(lambda: (chat / "outbox" / "1.txt").exists() and (chat / "outbox" / "1.txt").read_text())
    return answer


def test_the_scheduler_is_every_agents_tool_and_an_answer_with_no_channel_is_logged(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "home", "--stdin", input=world.key)
    world.provider.script(
        lambda _: Reply(
            tool_calls=[ToolCall("schedule", {"message": "Remind the owner to water the plants", "at": _soon(3)})]
        ),
        Reply(text="I will."),
        Reply(text="Water the plants now."),
    )
    world.env["TZ"] = "LNK-5:30"  # the owner's zone: "at 9:00" is their 9:00
    world.start("work")
    agent, home = world.agent("work"), world.agent("home")
    name = f"scheduler-{agent.id}"
    assert name in world.spec("work").tool_urls
    tool = find_tool(world.layout, name)
    assert tool is not None and tool.argv[1:] == ["serve", "--state", str(agent.folder.scheduler)]
    assert tool.sandboxed and sorted(tool.writes) == sorted([str(agent.folder.scheduler), str(home.folder.scheduler)])
    assert json.loads(tool.env[ENV_AGENTS]) == {"home": {"id": home.id, "state": str(home.folder.scheduler)}}
    assert tool.env[ENV_NARROWS] == "1" and tool.env["TZ"] == "LNK-5:30"  # lnk-mini narrows by Link-Tools
    assert set(tool.no_ask) == {"start_subagent", "schedule", "schedules", "cancel", "message_agent"}

    assert world.chat("work", "remind me to water the plants in a moment").strip() == "I will."
    logged = wait_until(
        lambda: "Water the plants now." in (log := world.lnk("agent", "logs", "work").stdout) and log,
        what="the schedule's answer in the agent's log",
    )
    assert "no channel is connected" in logged
    said = world.provider.requests[-1].json["messages"]
    assert said[-1] == {"role": "user", "content": "Remind the owner to water the plants"}


def test_a_schedules_answer_reaches_the_owners_chat_and_schedules_are_listed_and_cancelled(world: World) -> None:
    _connect(world, "work")
    world.provider.script(
        lambda _: Reply(
            tool_calls=[
                ToolCall("schedule", {"message": "Remind the owner to call the dentist", "at": _soon(4)}),
                ToolCall("schedule", {"message": "stand-up", "at": "07:00", "repeat": "FREQ=DAILY", "title": "daily"}),
            ]
        ),
        Reply(text="Both are set."),
        Reply(text="Time to call the dentist."),
    )
    world.start("work")
    assert _said(world, "remind me to call the dentist, and of the daily stand-up") == "Both are set."
    chat = world.root / "chat-work"
    listed = json.loads(world.lnk("agent", "schedules", "work", "--json").stdout)
    daily = next(item for item in listed if item["title"] == "daily")
    assert daily["repeat"] == "FREQ=DAILY"
    status = json.loads(world.lnk("agent", "status", "work", "--json").stdout)
    assert daily["id"] in [item["id"] for item in status["schedules"]]

    # Through the runner's look every second and a turn of the agent's: long on a busy machine.
    notices = wait_until(lambda: list((chat / "outbox").glob("notice-*.txt")), 60, "the reminder in the chat")
    assert [json.loads(n.read_text()) for n in notices] == [{"chat": None, "text": "Time to call the dentist."}]

    world.lnk("agent", "cancel", daily["id"], "work")
    assert json.loads(world.lnk("agent", "schedules", "work", "--json").stdout) == []
    refused = world.lnk("agent", "cancel", daily["id"], "work", ok=False)
    assert "no schedule" in refused.stderr and "Traceback" not in refused.stderr


SUBAGENTS_ANSWER = "The invoice is in work/."


def _invoice_answer(request: Recorded) -> Reply:
    """The model: the owner's ask starts a subagent, which answers its task; its parent says so,
    then passes the subagent's answer on."""
    last = request.json["messages"][-1]
    if last.get("content") == "find the invoice":
        return Reply(text=SUBAGENTS_ANSWER)
    if last.get("content") == SUBAGENTS_ANSWER:
        return Reply(text="Found it: the invoice is in work/.")
    if last.get("role") == "tool":
        return Reply(text="A subagent is on it.")
    return Reply(tool_calls=[ToolCall("start_subagent", {"task": "find the invoice", "tools": []})])


def test_a_subagent_is_told_its_parent_through_the_tool_bridge_and_answers_up(world: World) -> None:
    """The call's `_meta` crosses lnk's tool bridge: the subagent is narrowed to no tool at all, its
    answer is said in the conversation that started it, and that answer goes to its chat."""
    _connect(world, "work")
    # The subagent's turn may ask the model before its parent's turn does again: answered by what
    # each request says, not by the order they come in.
    world.provider.script(*[_invoice_answer] * 4)
    world.start("work")
    assert _said(world, "find my invoice") == "A subagent is on it."
    chat = world.root / "chat-work"
    # The subagent's turn, then its parent's, each through the runner: long on a busy machine.
    notices = wait_until(lambda: list((chat / "outbox").glob("notice-*.txt")), 60, "the parent's answer in the chat")
    assert [json.loads(n.read_text()) for n in notices] == [
        {"chat": "owner", "text": "Found it: the invoice is in work/."}
    ]
    up = next(r for r in world.provider.requests if r.json["messages"][-1].get("content") == SUBAGENTS_ANSWER)
    subagent = next(r for r in world.provider.requests if r.json["messages"][-1].get("content") == "find the invoice")
    assert subagent.tool_names == set()
    assert up.json["messages"][-1] == {"role": "user", "content": SUBAGENTS_ANSWER}
