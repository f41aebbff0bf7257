"""The helper's channel side: connect prompts on stderr and answers on stdout; bridge reads stdin."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from link_plugin.channel import BridgeSpec, EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.errors import ExitCode
from link_plugin.harness import AgentRef

CHANNEL = """
import sys
from link_plugin.channel import Connected, Describe, SecretField
from link_plugin.plugin import ChannelPlugin, run, say

class Echo(ChannelPlugin):
    name = "echo"

    def describe(self, ctx):
        return Describe(title="Echo", secrets=[SecretField(name="token", prompt="Token")])

    def connect(self, ctx, token_stdin):
        token = sys.stdin.readline().strip() if token_stdin else "typed"
        if "bot:" + token in ctx.taken:
            from link_plugin.errors import LinkError
            raise LinkError("another agent here has this bot")
        say("pairing code: 123456")
        return Connected(identity="bot:" + token, section={"agent": ctx.agent}, secrets={"token": token})

    async def bridge(self, spec):
        say("bridging for " + spec.agent.name + " with " + spec.secrets["token"][:2])

run(Echo())
"""


def test_connect_prompts_on_stderr_and_answers_on_stdout(make_plugin: Callable[[str, str], Path]) -> None:
    exe = make_plugin("lnk-echo", CHANNEL)
    done = subprocess.run(
        [exe, "connect", "--token-stdin"],
        input="abc\n",
        capture_output=True,
        text=True,
        env={"LNK_AGENT": "main", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == ExitCode.ANSWERED
    assert "pairing code: 123456" in done.stderr
    assert json.loads(done.stdout) == {"identity": "bot:abc", "section": {"agent": "main"}, "secrets": {"token": "abc"}}


def test_connect_refuses_a_taken_identity(make_plugin: Callable[[str, str], Path]) -> None:
    exe = make_plugin("lnk-echo", CHANNEL)
    done = subprocess.run(
        [exe, "connect", "--token-stdin"],
        input="abc\n",
        capture_output=True,
        text=True,
        env={"LNK_CHANNEL_TAKEN": '["bot:abc"]', "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == ExitCode.FAILED
    assert json.loads(done.stdout)["error"] == "another agent here has this bot"


def test_bridge_reads_its_spec_from_stdin(make_plugin: Callable[[str, str], Path]) -> None:
    exe = make_plugin("lnk-echo", CHANNEL)
    spec = BridgeSpec(
        contract=CONTRACT_VERSION,
        agent=AgentRef(name="main", id="abcdefabcdef", owner="me@here"),
        endpoint=EndpointRef(url="http://127.0.0.1:1/v1", key="k"),
        secrets={"token": "secret"},
    )
    done = subprocess.run([exe, "bridge"], input=spec.model_dump_json() + "\n", capture_output=True, text=True)
    assert done.returncode == ExitCode.ANSWERED
    assert "bridging for main with se" in done.stderr
    assert "secret" not in done.stdout


def test_bridge_without_a_spec_is_a_usage_error(make_plugin: Callable[[str, str], Path]) -> None:
    exe = make_plugin("lnk-echo", CHANNEL)
    done = subprocess.run([exe, "bridge"], input="", capture_output=True, text=True)
    assert done.returncode == ExitCode.USAGE
    assert "BridgeSpec" in done.stderr
