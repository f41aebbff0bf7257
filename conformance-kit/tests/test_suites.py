"""The memory and channel suites pass honest plugins and fail broken ones, naming the rule."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from link_conformance import ChannelConformance, MemoryConformance


class TestKitMemory(MemoryConformance):
    plugin = "lnk-kit-memory"


class TestKitChannel(ChannelConformance):
    plugin = "lnk-kit-channel"
    bridge_secrets = {"token": "not-a-real-token"}


def kit(plugin: str, *select: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "link_conformance",
            "--lnk-plugin",
            plugin,
            "-q",
            "-p",
            "no:cacheprovider",
            *select,
        ],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("plugin", "rule", "test"),
    [
        ("lnk-kit-memory-broken", "memory-tools", "TestMemory::test_command_serves_mcp"),
        ("lnk-kit-channel-broken", "bridge-proof", "TestChannel::test_bridge_refuses_a_false_endpoint"),
    ],
)
def test_the_kit_fails_a_broken_plugin(plugin: str, rule: str, test: str) -> None:
    done = kit(plugin, "-k", "TestMemory or TestChannel")
    assert done.returncode == 1, done.stdout[-3000:]
    assert f"conformance rule '{rule}' broken" in done.stdout
    assert "FAILED" in done.stdout and test in done.stdout


def test_the_kit_skips_other_kinds_and_checks_fixtures() -> None:
    done = kit("lnk-kit-memory")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "skipped" in done.stdout
