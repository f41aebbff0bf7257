"""What lnk asks lnk-sandbox, through its executable: a double records it (the real sandbox is
proved in its own package and end to end)."""

from __future__ import annotations

import json
from typing import Any

from world import World

from link_plugin.sandbox import PROXY_PORT, SandboxRequest


def _asked(calls: list[dict[str, Any]], command: str) -> list[dict[str, Any]]:
    return [call for call in calls if call["args"][:1] == [command]]


def test_a_sandboxed_start_hands_the_sandbox_the_harness_and_no_key(world: World) -> None:
    calls = world.with_sandbox()
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    world.lnk("sandbox", "tool", "add", "words", "--", "/bin/true")
    failed = world.lnk("agent", "start", "work", "--harness", "mini", ok=False)
    assert "the sandbox double runs nothing" in failed.stderr  # the start says why the harness ended

    runs = [SandboxRequest.model_validate(call["request"]) for call in _asked(world.calls(calls), "run")]
    setup = [r for r in runs if r.mode == "setup"]
    assert [r.argv[1:] for r in setup] == [["install"], ["configure"]]  # each in the sandbox, with its hosts
    assert all(r.hosts == [] and r.harness == "mini" for r in setup)
    harness = next(r for r in runs if r.mode == "harness")
    agent = world.agent("work")
    block = agent.settings.ports
    assert harness.agent == "work" and harness.harness == "mini"
    assert harness.argv[-2:] == ["-m", "link_conformance.mini.server"]  # mini's `start`
    assert harness.writes == [str(agent.folder.chats)]  # mini's `folders`
    assert harness.ports == block[:-1]
    scheduler = f"scheduler-{agent.id}"
    assert harness.proxy_port is None and harness.tools == sorted(["words", scheduler])  # the proxy: in its network
    assert harness.no_sandbox is False and harness.wire_keys is True  # Link's default: the proxy adds the key
    tools = json.loads(harness.env["LNK_TOOLS"])
    assert tools == {name: f"http://127.0.0.1:{PROXY_PORT}/_link/tools/{name}/mcp" for name in ("words", scheduler)}
    settings = world.harness_settings("work")
    assert settings.proxied is True
    assert settings.model is not None and settings.model.url == "http://api.openai.com/v1"  # the proxy adds the key
    assert world.key not in json.dumps(world.calls(calls))


def test_needs_are_asked_through_the_sandbox_and_a_no_keeps_the_agent_where_it_was(world: World) -> None:
    calls = world.with_sandbox({"granted": [], "denied": ["lan"], "risks": [], "asked": True})
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    world.lnk("agent", "use", "mini", "work")
    refused = world.lnk("agent", "use", "needy", "work", "--yes", ok=False)
    assert "needy needs lan beyond mini: its tests say so" in refused.stderr
    assert "stays on mini" in refused.stderr
    assert world.agent("work").settings.harness == "mini"
    asked = _asked(world.calls(calls), "needs")[-1]
    assert asked["args"][:5] == ["needs", "--agent", "work", "--harness", "needy"]
    assert "--yes" in asked["args"] and "--allow-unsandboxed" not in asked["args"]
    assert asked["needs"] == {"permissions": [{"name": "lan", "why": "its tests say so"}], "risks": []}

    world.env["LNK_SANDBOX_DECISION"] = json.dumps({"granted": ["lan"], "asked": True})
    world.lnk("agent", "use", "needy", "work")
    assert world.agent("work").settings.harness == "needy"
    assert "already runs needy" in world.lnk("agent", "use", "needy", "work").stderr


def test_a_harness_granted_no_sandbox_runs_without_one_and_says_so(world: World) -> None:
    world.with_sandbox({"granted": ["unsandboxed"], "asked": False})
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    started = world.lnk("agent", "start", "work", "--harness", "needy", "--allow-unsandboxed")
    assert "runs without a sandbox as granted to needy" in started.stderr
    assert world.spec("work").sandboxed is False
    assert world.chat("work", "hi").strip() == "ok"


def test_a_machine_that_forbids_no_sandbox_refuses_every_way(world: World) -> None:
    world.with_sandbox({"granted": ["unsandboxed"], "asked": False})
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    (world.root / "config" / "machine.toml").write_text("unsandboxed = false\n")
    refused = world.lnk("agent", "start", "work", "--harness", "mini", "--no-sandbox", ok=False)
    assert "forbids running an agent without a sandbox" in refused.stderr
    granted = world.lnk("agent", "start", "work", "--harness", "needy", ok=False)
    assert "forbids running an agent without a sandbox" in granted.stderr
    machine = (world.root / "config" / "machine.toml").read_text()
    assert "unsandboxed = false" in machine and "id = " in machine  # its ID and name are added, the switch kept


def test_grants_permissions_check_and_run_are_the_sandboxs(world: World) -> None:
    calls = world.with_sandbox()
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    world.lnk("agent", "use", "mini", "work")
    world.lnk("agent", "allow", "tcp", "github.com:22", "--agent", "work")
    world.lnk("agent", "deny", "network", "--agent", "work")
    world.lnk("agent", "mini", "allow", "lan")
    world.lnk("agent", "mini", "repermit")
    assert "network" in world.lnk("agent", "permissions").stdout
    assert json.loads(world.lnk("agent", "permissions", "--json").stdout)["permissions"][0]["name"] == "network"
    assert (
        json.loads(world.lnk("agent", "mini", "check", "--agent", "work", "--json").stdout)["results"]["lan"] is False
    )
    ran = world.lnk("agent", "mini", "run", "--agent", "work", "--", "echo", "--not-an-option", ok=False)
    assert ran.returncode == 1
    asked = [call["args"] for call in world.calls(calls)]
    assert ["allow", "--agent", "work", "tcp", "github.com:22"] in asked
    assert ["deny", "--agent", "work", "network"] in asked
    assert ["harness", "allow", "--harness", "mini", "lan"] in asked
    assert ["harness", "repermit", "--harness", "mini"] in asked
    assert ["check", "--agent", "work", "--harness", "mini", "--json"] in asked
    assert ["run", "--agent", "work", "--harness", "mini", "--", "echo", "--not-an-option"] in asked
