"""Each suite passes an honest plugin (lnk-mini, the kit's memory engine and channel) and fails a
broken one, naming the rule: one kit run per plugin. The honest ones run in this process, each
suite's plugin started once for the class; the broken ones as a user runs the kit, with `--pyargs`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from link_conformance import ChannelConformance, HarnessConformance, MemoryConformance

# plugin -> the checks that fail, and what the failures say
BROKEN: dict[str, tuple[set[str], list[str]]] = {
    # Its proof holds the key: the kit's own client then refuses to send it a message at all.
    "lnk-broken": (
        {
            "TestHarness::test_proof",
            "TestHarness::test_describe_agrees_with_each_command",
            "TestHarness::test_endpoint_streams",
            "TestHarness::test_tools_narrow",
            "TestHarness::test_tools_are_told_the_conversation",
        },
        [
            "conformance rule 'proof' broken: ",
            "the answer holds the endpoint key",
            "conformance rule 'harness-describe' broken: ",
            "it says `ports` answers count=2",
            "could not prove it is the agent's harness; its key was not sent",
        ],
    ),
    "lnk-kit-memory-broken": (
        {"TestMemory::test_command_serves_mcp"},
        ["conformance rule 'memory-tools' broken: ", "forget-everything"],
    ),
    "lnk-kit-channel-broken": (
        {"TestChannel::test_bridge_refuses_a_false_endpoint"},
        ["conformance rule 'bridge-proof' broken: ", "the bridge never asked for a proof"],
    ),
}


def kit(plugin: str, *select: str) -> tuple[int, str]:
    """`pytest --pyargs link_conformance --lnk-plugin <plugin>`, as a user runs it: its code and output."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "link_conformance", "--lnk-plugin", plugin, "-q"]
        + ["-p", "no:cacheprovider", *select],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=600,
    )
    return done.returncode, done.stdout


class TestMini(HarnessConformance):
    plugin = "lnk-mini"


class TestKitMemory(MemoryConformance):
    plugin = "lnk-kit-memory"


class TestKitChannel(ChannelConformance):
    plugin = "lnk-kit-channel"
    bridge_secrets = {"token": "not-a-real-token"}


@pytest.mark.parametrize("plugin", list(BROKEN))
def test_kit_fails_broken(plugin: str) -> None:
    code, output = kit(plugin)
    assert code == 1, output[-3000:]
    failing, said = BROKEN[plugin]
    failed = set(re.findall(r"^FAILED \S*test_conformance\.py::(\S+)", output, re.MULTILINE))
    assert failed == failing, output[-3000:]
    for words in said:
        assert words in output, output[-3000:]


def test_the_kit_skips_other_kinds_and_checks_fixtures() -> None:
    code, output = kit("lnk-kit-memory", "-k", "not TestMemory")
    assert code == 0, output[-3000:]
    assert "skipped" in output and "passed" in output, output[-3000:]
