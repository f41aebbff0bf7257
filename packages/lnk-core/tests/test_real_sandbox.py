"""With the real lnk-sandbox, where bubblewrap can make a sandbox: the agent answers from inside it,
reaches its tools through its proxy, and nothing it runs holds the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from world import TOOL, World, sandboxes

from lnk_testing.processes import descendants


@pytest.mark.skipif(not sandboxes(), reason="bubblewrap can't make a sandbox here")
def test_a_sandboxed_agent_answers_reaches_its_tools_and_holds_no_key(world: World) -> None:
    world.lnk("sandbox", "tool", "add", "words", "--no-ask", "lookup", "--", *TOOL)
    world.lnk("agent", "keys", "set", "openai", "boxed", "--stdin", input=world.key)
    world.lnk("agent", "start", "boxed", "--harness", "mini")
    assert world.chat("boxed", "hello from outside").strip() == "ok"
    request = world.provider.requests[-1]
    assert request.headers["authorization"] == f"Bearer {world.key}"  # added by the sandbox's proxy
    assert {"lookup", "erase"} <= request.tool_names  # the harness listed its tool through the proxy
    status = json.loads(world.lnk("agent", "status", "boxed", "--json").stdout)
    assert status["sandbox"] == "bubblewrap" and status["grants"]["permissions"]["network"] is True
    for pid in descendants([world.harness_pid("boxed")]):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        assert world.key.encode() not in environ
    for path in world.agent("boxed").folder.root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert world.key.encode() not in path.read_bytes()


def test_without_bubblewrap_a_start_names_the_command_that_installs_it(world: World) -> None:
    """A fresh machine: the first start stops before running anything, naming the install command,
    never a traceback. This machine's bwrap is left alone: the PATH given lacks it."""
    bare = world.root / "bin"
    bare.mkdir()
    for directory in world.env["PATH"].split(":"):
        for found in Path(directory).glob("*") if Path(directory).is_dir() else []:
            if found.name != "bwrap" and not (bare / found.name).exists():
                (bare / found.name).symlink_to(found)
    world.env["PATH"] = str(bare)
    world.lnk("agent", "keys", "set", "openai", "fresh", "--stdin", input=world.key)
    refused = world.lnk("agent", "start", "fresh", "--harness", "mini", ok=False)
    assert "sudo apt-get install bubblewrap" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.skipif(not sandboxes(), reason="bubblewrap can't make a sandbox here")
def test_a_sandboxed_harness_holding_its_own_key_sends_it_and_the_proxy_adds_none(world: World) -> None:
    """lnk agent keys wire off: the harness is handed its key at start and sends it to the proxy,
    which speaks TLS to the provider (here its stand-in) and adds nothing."""
    world.lnk("agent", "keys", "set", "openai", "boxed", "--stdin", input=world.key)
    world.lnk("agent", "keys", "wire", "off", "boxed")
    world.lnk("agent", "start", "boxed", "--harness", "mini")
    request = world.spec("boxed").request
    assert request is not None and request.wire_keys is False
    assert world.chat("boxed", "hello").strip() == "ok"
    assert world.provider.requests[-1].headers["authorization"] == f"Bearer {world.key}"
    logged = [json.loads(line) for line in (world.agent("boxed").config.root / "proxy.log").read_text().splitlines()]
    to_provider = [line for line in logged if line.get("provider") == "openai"]
    assert to_provider and not any(line["key"] for line in to_provider)
