"""`lnk-whatsapp connect` and `link` as Link runs them, against the fake engine: the risk said
before anything is linked, the owner's number typed, the device linked by a pair code or a QR code
in the channel's folder, a number another agent has refused."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from lnk_whatsapp.connect import RISK
from lnk_whatsapp.process import ENV_ENGINE

from link_plugin.channel import ENV_CHANNEL_DIR, ENV_CHANNEL_TAKEN, Connected
from link_plugin.harness import Done
from lnk_testing.whatsapp import ACCOUNT, PAIR_CODE, FakeWhatsApp


def _run(
    command: str, whatsapp: FakeWhatsApp, folder: Path, taken: list[str] | None = None, terminal: int | None = None
) -> subprocess.Popen[str]:
    """`lnk-whatsapp connect --token-stdin` (or `link`, in the `terminal` given) as Link runs it."""
    return subprocess.Popen(
        ["lnk-whatsapp", command, *(["--token-stdin"] if terminal is None else [])],
        stdin=subprocess.PIPE if terminal is None else terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            ENV_ENGINE: whatsapp.command,
            ENV_CHANNEL_DIR: str(folder),
            ENV_CHANNEL_TAKEN: json.dumps(taken or []),
        },
    )


def _shown_until(process: subprocess.Popen[str], words: str) -> str:
    assert process.stderr is not None
    shown = ""
    while words not in shown:
        said = process.stderr.read(1)  # a prompt ends with no newline
        assert said, f"it ended first: {shown}"
        shown += said
    return shown


def _ended(process: subprocess.Popen[str]) -> tuple[str, str]:
    """What it printed once it ended: its answer, and the rest of what the terminal showed."""
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()
    process.wait(timeout=20)
    return out, err


@pytest.fixture
def unlinked() -> object:
    with FakeWhatsApp(linked=False) as fake:
        yield fake


def test_the_risk_is_said_then_the_device_is_linked_by_a_pair_code(unlinked: FakeWhatsApp, tmp_path: Path) -> None:
    folder = tmp_path / "channels" / "whatsapp"
    process = _run("connect", unlinked, folder)
    assert process.stdin is not None
    process.stdin.write("+1 (555) 000-1234\n+1 555 000 0100\n")
    process.stdin.close()
    shown = _shown_until(process, PAIR_CODE)
    assert shown.index(RISK[:40]) < shown.index(PAIR_CODE), "the risk comes before anything is linked"
    assert "not through Meta's business API" in shown
    assert unlinked.paired == ["15550000100"], "the pair code is asked for the number typed"
    unlinked.link()
    out, err = _ended(process)
    assert process.returncode == 0, err
    connected = Connected.model_validate_json(out)
    assert connected.identity == f"whatsapp:{ACCOUNT}" and connected.secrets == {}
    assert connected.section == {"owner": "15550001234", "account": ACCOUNT}, "the owner is the number typed"
    assert "answers +15550001234" in err and "nobody else" in err
    assert unlinked.folders == [str(folder)], "the engine linked into the channel's folder"


def test_enter_instead_of_a_number_links_by_a_qr_code_in_the_terminal(unlinked: FakeWhatsApp, tmp_path: Path) -> None:
    process = _run("connect", unlinked, tmp_path / "whatsapp")
    assert process.stdin is not None
    process.stdin.write("+15550001234\n\n")
    process.stdin.close()
    shown = _shown_until(process, "scan this")
    unlinked.link()
    out, err = _ended(process)
    assert process.returncode == 0, err
    assert "█" in err or "▀" in err or "▄" in err, "a QR code drawn in the terminal"
    assert unlinked.paired == [] and "Linked devices" in shown


def test_a_number_another_agent_has_linked_is_refused(unlinked: FakeWhatsApp, tmp_path: Path) -> None:
    folder = tmp_path / "whatsapp"
    process = _run("connect", unlinked, folder, taken=[f"whatsapp:{ACCOUNT}"])
    assert process.stdin is not None
    process.stdin.write("+15550001234\n+15550000100\n")
    process.stdin.close()
    _shown_until(process, PAIR_CODE)
    unlinked.link()
    out, err = _ended(process)
    assert process.returncode != 0
    assert "another agent here has +15550000100" in json.loads(out)["error"]
    assert list(folder.iterdir()) == [], "the device just linked is forgotten"


def test_a_number_that_isnt_one_says_what_one_looks_like(unlinked: FakeWhatsApp, tmp_path: Path) -> None:
    process = _run("connect", unlinked, tmp_path / "whatsapp")
    assert process.stdin is not None
    process.stdin.write("my number\n")
    process.stdin.close()
    out, err = _ended(process)
    assert process.returncode != 0 and "Traceback" not in err
    said = json.loads(out)
    assert "isn't a phone number" in said["error"] and "country code" in said["hint"]
    assert unlinked.engines == 0, "nothing linked"


def test_link_alone_links_the_device_for_a_harness(unlinked: FakeWhatsApp, tmp_path: Path) -> None:
    folder = tmp_path / "whatsapp"
    typing, terminal = pty.openpty()
    process = _run("link", unlinked, folder, terminal=terminal)
    os.close(terminal)
    _shown_until(process, "The WhatsApp number to link")
    os.write(typing, b"+15550000100\n")
    _shown_until(process, PAIR_CODE)
    unlinked.link()
    out, err = _ended(process)
    assert process.returncode == 0, err
    done = Done.model_validate_json(out)
    assert done.ok and ACCOUNT in (done.detail or "") and str(folder) in (done.detail or "")
