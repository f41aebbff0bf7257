"""6. The owner connects Slack and Discord too: each channel's plugin installs on first use from the
signed release, pairs the owner by its code, and the same agent (its harness in the sandbox, its
memory) answers on each, in a conversation of that channel's own, from what it remembered on
Telegram. `status` and `list --json` show the channels; `disconnect` forgets one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest
from conftest import AGENT

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.waiting import wait_for
from lnk_testing.discord import TOKEN, DiscordUser, FakeDiscord
from lnk_testing.slack import APP_TOKEN, BOT_TOKEN, FakeSlack, SlackUser

CODE = re.compile(r"To pair, send this code .*: ([A-Z0-9]{4}-[A-Z0-9]{4})")
SLACK_OWNER = SlackUser("U0OLIVIA", "olivia")
DISCORD_OWNER = DiscordUser(4242, "olivia")


@pytest.fixture(scope="module")
def slack(machine: Machine) -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        machine.env["LNK_SLACK_API"] = fake.api  # the bridge starts from connect's environment
        yield fake


@pytest.fixture(scope="module")
def discord(machine: Machine) -> Iterator[FakeDiscord]:
    with FakeDiscord() as fake:
        machine.env["LNK_DISCORD_API"] = fake.origin
        yield fake


def connect(machine: Machine, channel: str, tokens: list[str], send: Callable[[str], object]) -> str:
    """`lnk agent connect <channel>`: the tokens on stdin, the code from the terminal sent by the
    owner; what the terminal showed."""
    connecting = machine.spawn("agent", "connect", channel, AGENT, "--token-stdin")
    assert connecting.stdin is not None and connecting.stdout is not None
    connecting.stdin.write("".join(f"{token}\n" for token in tokens))
    connecting.stdin.close()
    said: list[str] = []
    for line in connecting.stdout:
        said.append(line)
        if found := CODE.search(line):
            send(found.group(1))
            break
    said += connecting.stdout
    assert connecting.wait(timeout=300) == 0, f"connect {channel} failed ({connecting.returncode}):\n{''.join(said)}"
    return "".join(said)


def carrying(machine: Machine, channel: str) -> None:
    machine.status_when(
        AGENT, lambda status: status["channels"][channel]["bridge"] == "running", 60, f"the {channel} bridge"
    )


def ask(model: Model, send: Callable[[], object], shown: Callable[[str], bool], calls: int) -> str:
    """Send a message, the model answering in `calls` requests; the answer once shown whole."""
    answers = len(model.answers)
    model.expect(calls)
    send()
    answer = model.answer(answers)
    wait_for(lambda: shown(answer), 60, f"the answer {answer!r}")
    return answer


def test_slack_and_discord_carry_the_same_agent_and_disconnect_forgets(
    machine: Machine, agent: str, model: Model, slack: FakeSlack, discord: FakeDiscord
) -> None:
    said = connect(machine, "slack", [BOT_TOKEN, APP_TOKEN], lambda code: slack.dm(SLACK_OWNER, code))
    assert '"socket_mode_enabled": true' in said, "the manifest to make the app from"
    assert f"Slack member {SLACK_OWNER.id}" in said
    said = connect(machine, "discord", [TOKEN], lambda code: discord.dm(DISCORD_OWNER, code))
    assert f"Discord user {DISCORD_OWNER.id}" in said
    assert discord.identified[-1] == (1 << 12) | (1 << 9), "direct and server messages, nothing else"
    carrying(machine, "slack")
    carrying(machine, "discord")

    asked = len(model.requests)
    answer = ask(
        model,
        lambda: slack.dm(SLACK_OWNER, "What is my sister called?"),
        lambda answer: answer in slack.texts(SLACK_OWNER.dm),
        calls=2,
    )
    assert answer == "Your sister is called Ana.", "from the note remembered on Telegram"
    assert model.requests[asked].json["messages"][-1]["content"] == "What is my sister called?"
    answer = ask(
        model,
        lambda: discord.dm(DISCORD_OWNER, "Hello from Discord"),
        lambda answer: answer in discord.texts(DISCORD_OWNER.dm),
        calls=1,
    )
    assert answer == "You said: Hello from Discord"
    conversations = {c.name for c in (machine.folder(AGENT) / "chats").iterdir()}
    assert {f"slack:{SLACK_OWNER.dm}", f"discord:{DISCORD_OWNER.dm}"} <= conversations, "each a conversation of its own"

    (listed,) = [a for a in json.loads(machine.lnk("agent", "list", "--json").stdout) if a["name"] == AGENT]
    assert {"telegram", "slack", "discord"} <= set(listed["channels"])
    channels = machine.status(AGENT)["channels"]
    assert channels["slack"]["identity"] == f"slack-app:{slack.app_id}"
    assert channels["discord"]["identity"] == f"discord-bot:{discord.bot.id}"

    machine.lnk("agent", "disconnect", "slack", AGENT)
    assert "slack" not in machine.status(AGENT)["channels"]
    assert "slack" not in machine.settings(AGENT).get("channels", {})
    keys = json.loads(machine.lnk("agent", "keys", "list", AGENT, "--json").stdout)["keys"]
    assert not [key for key in keys if key.startswith("slack/")] and "discord/bot-token" in keys
