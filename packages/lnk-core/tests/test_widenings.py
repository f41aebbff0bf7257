"""`lnk agent status` shows every widening the owner granted, whether the agent runs or not: they
are kept in its grants files (read by the real lnk-sandbox here) and hold at every sandboxed start."""

from __future__ import annotations

import json
from typing import Any

from world import World


def _status(world: World) -> tuple[dict[str, Any], str]:
    as_json = json.loads(world.lnk("agent", "status", "work", "--json").stdout)
    text = world.lnk("agent", "status", "work").stdout
    return as_json, text


def _assert_every_widening(found: dict[str, Any], text: str) -> None:
    grants = found["grants"]
    assert grants["permissions"]["read-home"] is True
    assert grants["tcp"] == ["github.com:22"]
    assert grants["hosts"] == ["api.openai.com"]
    assert grants["harness"] == ["open"]  # the harness's own layer, answered when it was chosen
    assert grants["risks"] == ["open-port"]
    rows = {line.split(maxsplit=1)[0]: line for line in text.splitlines() if line.strip()}
    assert "read-home" in rows["permissions"] and "network" in rows["permissions"]
    assert rows["hosts"].split()[-1] == "api.openai.com"
    assert rows["endpoints"].split()[-1] == "github.com:22"
    assert any(line.startswith("harness grants") and line.split()[-1] == "open" for line in text.splitlines())
    assert rows["risks"].split()[-1] == "open-port"


def test_status_shows_every_widening_running_or_not(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    world.lnk("agent", "use", "risky", "work", "--yes")  # asks for its permission and its risk
    world.lnk("agent", "allow", "read-home", "--agent", "work")
    world.lnk("agent", "allow", "tcp", "github.com:22", "--agent", "work")
    world.lnk("agent", "allow", "host", "api.openai.com", "--agent", "work")
    world.lnk("agent", "keys", "wire", "off", "work")

    stopped, text = _status(world)
    assert stopped["running"] is False
    _assert_every_widening(stopped, text)
    assert stopped["keys_wired"] is False and "held by its harness" in text

    world.lnk("agent", "keys", "wire", "default", "work")
    world.lnk("agent", "start", "work", "--no-sandbox")
    running, text = _status(world)
    assert running["running"] is True and running["sandbox"] == "none"
    _assert_every_widening(running, text)
    assert running["keys_wired"] is True and "added by its proxy" in text


def test_a_new_agent_shows_links_defaults(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    found, text = _status(world)
    assert found["grants"]["tcp"] == [] and found["grants"]["hosts"] is None and found["grants"]["risks"] == []
    assert found["grants"]["permissions"]["network"] is True and found["grants"]["permissions"]["lan"] is False
    assert "endpoints" not in text and "risks" not in text
    assert found["keys_wired"] is True
