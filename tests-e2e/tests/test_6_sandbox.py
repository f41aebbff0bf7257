"""6. Nothing the agent runs can read Link's settings (its keys) or reach this machine's network: tried
from inside its sandbox with `lnk agent link run`, beside the same tries from outside, which work.
The model key reached the provider all along, added by the proxy: no process in the harness's
sandbox holds it, and no file of the agent's does."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import AGENT

from lnk_e2e import processes
from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_testing.telegram import FakeTelegram

PROBE = (Path(__file__).resolve().parents[1] / "src" / "lnk_e2e" / "probe.py").read_text()


def probe(machine: Machine, port: int, sandboxed: bool) -> dict[str, str]:
    """The probe run in the terminal, or in the agent's sandbox as its harness would run it."""
    inside = ["lnk", "agent", "link", "run", "--agent", AGENT, "--"] if sandboxed else []
    done = machine.run(*inside, "python3", "-c", PROBE, str(machine.config), str(port))
    found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_from_inside_the_sandbox_keys_and_the_loopback_are_out_of_reach(
    machine: Machine, agent: str, telegram: FakeTelegram
) -> None:
    outside = probe(machine, telegram.port, sandboxed=False)
    assert outside["list Link's settings"].startswith("open"), outside
    assert outside["read Link's settings"].startswith("open"), outside
    assert outside["connect to the loopback port"].startswith("open"), outside

    inside = probe(machine, telegram.port, sandboxed=True)
    assert inside["list Link's settings"].startswith("refused: FileNotFoundError"), inside
    assert inside["read Link's settings"].startswith("refused: FileNotFoundError"), inside
    assert inside["connect to the loopback port"].startswith("refused: ConnectionRefusedError"), inside
    assert inside["the loopback port through the proxy"] == "refused: PermissionError: HTTP/1.1 403 Forbidden", inside
    assert inside["a tunnel to the loopback port"] == "refused: PermissionError: HTTP/1.1 403 Forbidden", inside
    # The network itself is there: the proxy takes the same client to the model provider.
    assert inside["the model provider through the proxy"] == "open: HTTP/1.1 200 OK", inside


def test_the_key_is_added_by_the_proxy_and_held_by_nothing_the_agent_runs(
    machine: Machine, agent: str, model: Model, model_key: str
) -> None:
    assert model.requests, "the model was never asked"
    assert all(r.headers.get("authorization") == f"Bearer {model_key}" for r in model.requests)
    inside = processes.in_sandboxes(machine.status(AGENT)["process"]["pid"])
    assert any(p.argv[-2:] == ["-m", "lnk_harness.serve"] for p in inside)
    holding = [p.command for p in inside if p.mentions(model_key)]
    assert not holding, f"processes in the agent's sandboxes hold the model key: {holding}"
    files = [p for p in machine.folder(AGENT).rglob("*") if p.is_file() and not p.is_symlink()]
    assert files
    assert not [p for p in files if model_key.encode() in p.read_bytes()]
