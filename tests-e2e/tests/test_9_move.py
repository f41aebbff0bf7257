"""9. An agent moves between two homes on this machine, as it would between two machines:
`lnk agent send | lnk agent receive | lnk agent sent`, through pipes. Each home has its own Link
roots (LNK_CONFIG_DIR, LNK_AGENTS_DIR) and the same installed lnk. The agent, paired with the
owner's Telegram and with memory on, answers from its new home with the same ID, and finds there
what the owner told it in the old one; the old home refuses to start it. A stream of another
format is refused there, changing nothing. Then it goes back over `ssh localhost` (a private sshd
on the loopback, `lnk_e2e.ssh`), as between two machines, and answers from its first home again."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OWNER

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.pairing import pair
from lnk_e2e.phone import Phone
from lnk_e2e.release import Release
from lnk_e2e.ssh import LoopbackSSH, loopback_sshd
from lnk_e2e.waiting import wait_for
from lnk_testing.telegram import FakeTelegram

TRAVELLER = "traveller"
FAMILY = -1009876543


@pytest.fixture(scope="module")
def own_telegram() -> Iterator[FakeTelegram]:
    """A Telegram of the move's own, its bot read by the traveller alone: beside the story, the
    session's agent still carries the session's Telegram."""
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def homes(
    root: Path, machine: Machine, release: Release, model: Model, own_telegram: FakeTelegram
) -> Iterator[list[Machine]]:
    lnk = Path(os.readlink(machine.root / "bin" / "lnk"))
    made = []
    for name, ports in (("left", 300), ("arrived", 400)):
        home = Machine(root / f"home-{name}", lnk, release, model.origin, own_telegram.origin)
        home.env["LNK_PORTS_FROM"] = str(machine.ports_from + ports)
        made.append(home)
    yield made
    for home in made:
        home.lnk("agent", "stop", TRAVELLER, ok=False)
        home.close()


@pytest.fixture
def ssh(root: Path) -> Iterator[LoopbackSSH]:
    with loopback_sshd(root / "ssh") as served:
        yield served


def _move(
    left: Machine, arrived: Machine, over: LoopbackSSH | None = None
) -> tuple[subprocess.CompletedProcess[str], str]:
    """send | receive | sent, each in its home's environment (receive through `ssh localhost` when
    `over` is given, ssh itself run where the agent leaves); sent's result, and what receive said."""
    send = subprocess.Popen(
        ["lnk", "agent", "send", TRAVELLER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=left.env
    )
    receiving = ["lnk", "agent", "receive"]
    argv, env = (over.command(arrived.env, *receiving), left.env) if over else (receiving, arrived.env)
    receive = subprocess.Popen(argv, stdin=send.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert send.stdout is not None and receive.stdout is not None
    send.stdout.close()  # receive holds the pipe's reading end alone
    receipt, receive_said = receive.communicate(timeout=600)
    send.wait(timeout=60)
    sent = subprocess.run(
        ["lnk", "agent", "sent", TRAVELLER], input=receipt.decode(), capture_output=True, text=True, env=left.env
    )
    return sent, receive_said.decode()


def _newer_stream() -> bytes:
    """What a newer lnk's send would write: format 3, its manifest lnk-move-3.json."""
    out = io.BytesIO()
    out.write(b'{"lnk_move": 3, "grants": {}}\n')
    with tarfile.open(fileobj=out, mode="w|") as tar:
        data = json.dumps({"format": 3}).encode()
        info = tarfile.TarInfo("lnk-move-3.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def conversations(home: Machine) -> int:
    found = json.loads(home.lnk("agent", "memory", "status", TRAVELLER, "--json").stdout)["indexed"]
    return int(found.get("conversations", 0)) if isinstance(found, dict) else 0


def _kept(home: Machine) -> dict[str, bytes]:
    """What a receive would replace or add to: every agent's settings, keys and grants, and files."""
    paths = [*home.config.glob("agents/*/*.toml"), *home.config.glob("agents/*/keys.json")]
    paths += [p for p in home.agents.glob("*/Home/**/*") if p.is_file()]
    return {str(path): path.read_bytes() for path in paths}


def test_an_agent_moves_home_and_answers_there_knowing_what_it_knew(
    homes: list[Machine], model: Model, model_key: str, own_telegram: FakeTelegram, ssh: LoopbackSSH
) -> None:
    left, arrived = homes
    left.lnk("agent", "keys", "set", "openai", TRAVELLER, "--stdin", input=model_key)
    left.lnk("agent", "memory", "start", "link", TRAVELLER)
    left.lnk("agent", "start", TRAVELLER)
    pair(left, TRAVELLER, own_telegram, OWNER)
    owner = Phone(own_telegram, OWNER)
    told = owner.ask(model, "By the way, my sister is called Ana and she lives in Porto.", calls=1)
    assert told.answer.startswith("You said:")
    agent_id = left.status(TRAVELLER)["id"]

    sent, said = _move(left, arrived)
    assert sent.returncode == 0, f"{said}\n{sent.stderr}"
    assert "answers on" in sent.stderr

    there = arrived.status(TRAVELLER)
    assert there["running"] is True and there["id"] == agent_id, there
    assert there["memory"]["engine"] == "link" and "telegram" in there["channels"]
    refused = left.lnk("agent", "start", TRAVELLER, ok=False)
    assert refused.returncode == 1 and f"{TRAVELLER} ({agent_id}) moved to" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (left.config / "agents" / TRAVELLER).exists()

    # It answers the owner's Telegram from there: its bridge moved with it.
    hello = owner.ask(model, "Hello from your new home", calls=1)
    assert hello.answer == "You said: Hello from your new home"

    # Memory's index was built again there: once it holds the conversation that came, a new one, in
    # a group (nothing of the first in its messages), finds it.
    wait_for(lambda: conversations(arrived) >= 1, 120, "memory indexing the conversation that came")
    recalled = owner.in_group(FAMILY).ask(model, "What is my sister called?", calls=2)
    assert recalled.answer == "Your sister is called Ana."
    hits = [hit for hit in recalled.tool_result["results"] if "sister is called Ana" in hit["text"]]
    assert hits and hits[0]["kind"] == "conversation", recalled.tool_result

    before = _kept(arrived)
    newer = subprocess.run(
        ["lnk", "agent", "receive"], input=_newer_stream(), capture_output=True, env=arrived.env, timeout=120
    )
    refusal = newer.stderr.decode()
    assert newer.returncode == 1 and "format 3" in refusal and "receives format 2" in refusal, refusal
    assert "Traceback" not in refusal
    assert _kept(arrived) == before
    assert arrived.status(TRAVELLER)["running"] is True

    # And back, over ssh: the home it first left takes it again, and the one it leaves now refuses it.
    sent, said = _move(arrived, left, over=ssh)
    assert sent.returncode == 0, f"{said}\n{sent.stderr}"
    back = left.status(TRAVELLER)
    assert back["running"] is True and back["id"] == agent_id, back
    assert f"{TRAVELLER} ({agent_id}) moved to" in arrived.lnk("agent", "start", TRAVELLER, ok=False).stderr
    again = owner.ask(model, "Hello from your first home", calls=1)
    assert again.answer == "You said: Hello from your first home"
