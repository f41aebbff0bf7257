"""The whole way, with Link itself: `lnk` connects this channel, starts lnk-mini with an owner's
tool behind its tool bridge, and runs this bridge; the tool call the model makes waits for the
owner's press in Telegram, and runs only once they allowed it."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OWNER, STRANGER, send_the_code

from link_conformance import Reply, StandInProvider, ToolCall
from link_conformance.provider import Recorded
from link_conformance.running import free_block
from lnk_telegram.api import ENV_API
from lnk_testing import tool_server
from lnk_testing.telegram import FakeTelegram


class Machine:
    """Link's roots in a folder of their own and `lnk` run as its owner runs it."""

    def __init__(self, telegram: FakeTelegram, provider: StandInProvider, key: str) -> None:
        # Short, so the unix sockets under it stay within their 108-byte limit.
        self.root = Path(tempfile.mkdtemp(prefix="lnk-tg-", dir="/tmp"))
        self.tool_calls = self.root / "tool-calls"
        self.env = {
            **os.environ,
            # lnk-mini, the conformance kit's reference harness, is a console script beside this Python.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(self.root / "home"),
            "LNK_CONFIG_DIR": str(self.root / "config"),
            "LNK_AGENTS_DIR": str(self.root / "agents"),
            "LNK_SERVICES": "detached",
            "LNK_START_TIMEOUT": "30",
            # The agent's block from test ports of this run's own, not from 20000 where a person's are.
            "LNK_PORTS_FROM": str(free_block(10)),
            "LNK_UPSTREAM_OPENAI": provider.origin,
            ENV_API: telegram.origin,
            "TOOL_RECORD": str(self.tool_calls),
        }
        (self.root / "home").mkdir()
        self.provider = provider
        self.key = key

    def lnk(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["lnk", *args], input=input, capture_output=True, text=True, env=self.env, timeout=120, check=False
        )
        assert done.returncode == 0, f"lnk {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done

    def connect(self, telegram: FakeTelegram, agent: str) -> None:
        """`lnk agent connect telegram`, the owner sending the code the terminal shows."""
        process = subprocess.Popen(
            ["lnk", "agent", "connect", "telegram", agent, "--token-stdin"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        shown = send_the_code(process, telegram)
        assert process.stderr is not None
        assert process.wait(timeout=60) == 0, f"connect failed:\n{shown}{process.stderr.read()}"

    def close(self) -> None:
        subprocess.run(["lnk", "agent", "stop", "work"], env=self.env, capture_output=True, timeout=60, check=False)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def machine(telegram: FakeTelegram) -> Iterator[Machine]:
    key = "sk-test-" + secrets.token_hex(12)
    with StandInProvider(key=key) as provider:
        made = Machine(telegram, provider, key)
        try:
            yield made
        finally:
            made.close()


def _said(recorded: Recorded) -> Reply:
    return Reply(text=f"The tool said: {recorded.json['messages'][-1]['content']}")


def test_a_tool_call_waits_for_the_owners_press_in_telegram(machine: Machine, telegram: FakeTelegram) -> None:
    provider = machine.provider
    machine.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=machine.key)
    machine.lnk("agent", "use", "mini", "work")
    machine.lnk("sandbox", "tool", "add", "words", "--", sys.executable, tool_server.__file__)
    machine.connect(telegram, "work")
    machine.lnk("agent", "start", "work", "--harness", "mini", "--no-sandbox")
    provider.script(Reply(tool_calls=[ToolCall("erase", {"word": "old"})]), _said)

    telegram.private(OWNER, "erase old, please")
    telegram.wait(lambda: [m for m in telegram.messages(OWNER.id) if m.buttons], timeout=40)
    (question,) = [m for m in telegram.messages(OWNER.id) if m.buttons]
    assert question.text.startswith('words wants to run erase with {"word": "old"}')
    assert not machine.tool_calls.exists(), "nothing ran before the owner answered"
    theirs = telegram.press(STRANGER, question.message_id, "allow")
    telegram.private(STRANGER, "yes")
    telegram.wait(lambda: telegram.pending == 0)
    assert not machine.tool_calls.exists(), "a stranger's press is no answer"

    ours = telegram.press(OWNER, question.message_id, "allow")
    telegram.wait(lambda: telegram.texts(OWNER.id)[-1:] == ["The tool said: erased old"], timeout=40)
    ran = [line.rpartition(" ")[0] for line in machine.tool_calls.read_text().splitlines()]  # "<call> <pid>"
    assert ran == ["erase old"]
    assert question.text.endswith("Allowed.") and question.buttons == []
    assert telegram.queries[ours] == "Allowed." and telegram.queries[theirs] is None
    said = [r.json["messages"][-1].get("content") for r in provider.requests]
    assert "yes" not in said and "allow" not in said
