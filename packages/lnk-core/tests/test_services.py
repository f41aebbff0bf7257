"""Services: systemd --user units where systemd runs, keyed by the agent's ID; Link's names are its own."""

from __future__ import annotations

import pytest
from world import World

from lnk import services


def test_units_are_named_by_id_and_run_the_supervisor_parts(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    monkeypatch.setenv("LNK_CONFIG_DIR", world.env["LNK_CONFIG_DIR"])
    agent = world.agent("work")
    assert services.unit_name(agent, "harness") == f"lnk-agent-{agent.id}.service"
    assert services.unit_name(agent, "bridges") == f"lnk-bridge-{agent.id}.service"
    harness = services.unit_text(agent, "harness")
    assert "-m lnk.supervisor work --part harness" in harness
    assert "Restart=always" in harness and "WantedBy=default.target" in harness
    assert f'Environment="LNK_CONFIG_DIR={world.env["LNK_CONFIG_DIR"]}"' in harness
    bridges = services.unit_text(agent, "bridges")
    assert f"BindsTo=lnk-agent-{agent.id}.service" in bridges and "--part bridges" in bridges
    assert world.key not in harness + bridges


def test_how_services_run_can_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(services.ENV_SERVICES, "detached")
    assert services.service_mode() == "detached"
    monkeypatch.setenv(services.ENV_SERVICES, "systemd")
    assert services.service_mode() == "systemd"
    monkeypatch.delenv(services.ENV_SERVICES)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert services.service_mode() == "detached"  # no systemctl: a detached supervisor
