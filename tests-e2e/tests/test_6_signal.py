"""6. The owner connects Signal too: lnk-signal installs on first use from the signed release, says
the risk, takes the owner's number, links the agent's own number as a device (the link shown in
the terminal, scanned by its phone), and the agent, its harness in the sandbox, answers the owner's
number: one message each way through signal-cli's JSON-RPC on stdio (the fake signal-cli)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import AGENT
from test_6_channels import ask, carrying

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_testing.signal_cli import ACCOUNT, FakeSignal, SignalUser

OWNER = SignalUser("+15550004242", "Olivia")
HELLO = "Hello from your agent: this Signal account answers you, and only you."


@pytest.fixture(scope="module")
def signal(machine: Machine) -> Iterator[FakeSignal]:
    with FakeSignal() as fake:
        fake.users[OWNER.number] = OWNER
        machine.env["LNK_SIGNAL_CLI"] = str(fake.program)  # the bridge starts from connect's environment
        yield fake


def test_signal_links_the_agents_number_and_carries_one_message_each_way(
    machine: Machine, agent: str, model: Model, signal: FakeSignal
) -> None:
    connecting = machine.spawn("agent", "connect", "signal", AGENT, "--token-stdin")
    assert connecting.stdin is not None and connecting.stdout is not None
    connecting.stdin.write(f"{OWNER.number}\n")
    connecting.stdin.close()
    said: list[str] = []
    for line in connecting.stdout:
        said.append(line)
        if "sgnl://linkdevice" in line:
            signal.scan(ACCOUNT.number)
            break
    said += connecting.stdout
    assert connecting.wait(timeout=300) == 0, f"connect signal failed ({connecting.returncode}):\n{''.join(said)}"
    shown = "".join(said)
    assert "unofficial client (GPL-3.0)" in shown, "the risk is said before linking"
    assert signal.texts(OWNER.number) == [HELLO]
    assert machine.status(AGENT)["channels"]["signal"]["identity"] == f"signal:{ACCOUNT.number}"
    carrying(machine, "signal")

    answer = ask(
        model,
        lambda: signal.dm(OWNER, "Hello from Signal"),
        lambda answer: answer in signal.texts(OWNER.number),
        calls=1,
    )
    assert answer == "You said: Hello from Signal"
    assert f"signal:{OWNER.number}" in {c.name for c in (machine.folder(AGENT) / "chats").iterdir()}
    started = signal.started[-1]
    assert started.argv[-1] == "jsonRpc" and started.option("-a") == ACCOUNT.number
    device = machine.config / "agents" / AGENT / "channels" / "signal" / "device"
    assert started.option("--config") == str(device), "the device lives in the agent's channel folder"
    assert device.parent.stat().st_mode & 0o777 == 0o700
