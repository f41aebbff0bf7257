"""connect: the risk said, the owner's number typed, the device linked by the QR code shown, one
account per agent, the owner greeted; `cli link` links into a harness's home."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import OWNER
from lnk_signal import connect as connecting
from lnk_signal.connect import HELLO, RISK
from lnk_signal.section import identity

from link_plugin.channel import Connected
from link_plugin.errors import ExitCode
from lnk_testing.channels import Connecting, connect_program
from lnk_testing.signal_cli import ACCOUNT, FakeSignal


def linking(
    monkeypatch: pytest.MonkeyPatch, home: Path, owner: str = OWNER.number, taken: frozenset[str] = frozenset()
) -> Connecting:
    """connect running as in the owner's terminal, the number typed."""
    return Connecting(monkeypatch, connecting, lambda: connecting.connect(home, owner, taken, "main"))


def shown_link(connecting: Connecting, signal: FakeSignal) -> str:
    signal.wait(lambda: any("sgnl://linkdevice" in line for line in connecting.said) or connecting.error)
    return next(line for line in connecting.said if "sgnl://linkdevice" in line)


def test_the_owner_is_the_number_typed_and_the_device_is_linked_by_the_code_shown(
    signal: FakeSignal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pairing = linking(monkeypatch, tmp_path)
    shown = shown_link(pairing, signal)
    assert any("▀" in line or "█" in line for line in pairing.said), "a QR code drawn in the terminal"
    assert signal.links[-1] in shown
    signal.dm(OWNER, "sent while linking")
    signal.scan(ACCOUNT.number)
    pairing.done()
    assert pairing.result is not None, pairing.error
    assert pairing.result.identity == identity(ACCOUNT.number)
    assert pairing.result.section == {
        "account": ACCOUNT.number,
        "account_uuid": ACCOUNT.uuid,
        "owner": OWNER.number,
        "owner_uuid": OWNER.uuid,
    }
    assert pairing.result.secrets == {}, "the device's keys stay in the channel's folder"
    assert (tmp_path / "device" / "data").is_dir()
    assert signal.device_names == ["Link (main)"]
    assert signal.texts(OWNER.number) == [HELLO], "the owner hears from the agent"
    assert signal.held == 1, "what came while linking waits for the bridge"
    assert all("--receive-mode=manual" in started.argv for started in signal.started)


def test_a_folder_already_linked_is_not_linked_again(
    signal: FakeSignal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = linking(monkeypatch, tmp_path)
    shown_link(first, signal)
    signal.scan(ACCOUNT.number)
    first.done()
    again = linking(monkeypatch, tmp_path)
    again.done()
    assert again.result is not None and again.result.identity == identity(ACCOUNT.number)
    assert len(signal.links) == 1, "no second code"


def test_an_account_another_agent_has_is_refused_and_its_device_forgotten(
    signal: FakeSignal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pairing = linking(monkeypatch, tmp_path, taken=frozenset({identity(ACCOUNT.number)}))
    shown_link(pairing, signal)
    signal.scan(ACCOUNT.number)
    pairing.done()
    assert pairing.error is not None and "another agent here has" in pairing.error.message
    assert pairing.error.hint and "Linked devices" in pairing.error.hint
    assert not (tmp_path / "device").exists()
    assert signal.texts(OWNER.number) == []


def test_the_owners_own_number_is_refused_as_the_agents(
    signal: FakeSignal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pairing = linking(monkeypatch, tmp_path, owner=ACCOUNT.number)
    shown_link(pairing, signal)
    signal.scan(ACCOUNT.number)
    pairing.done()
    assert pairing.error is not None and "your own number" in pairing.error.message


def test_a_number_not_on_signal_is_refused(signal: FakeSignal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pairing = linking(monkeypatch, tmp_path, owner="+15559990000")
    shown_link(pairing, signal)
    signal.scan(ACCOUNT.number)
    pairing.done()
    assert pairing.error is not None and "+15559990000 isn't on Signal" in pairing.error.message
    assert signal.sent == []


def _channel(tmp_path: Path) -> dict[str, str]:
    return {"LNK_AGENT": "main", "LNK_CHANNEL_DIR": str(tmp_path), "LNK_CHANNEL_TAKEN": json.dumps(["signal:+1555"])}


def test_the_executable_links_with_the_number_on_stdin(signal: FakeSignal, tmp_path: Path) -> None:
    process = connect_program("lnk-signal", _channel(tmp_path))
    assert process.stdin is not None and process.stderr is not None and process.stdout is not None
    process.stdin.write(" +1 (555) 000-1001\n")
    process.stdin.close()
    shown = ""
    while "sgnl://" not in shown:
        line = process.stderr.readline()
        assert line, f"connect ended without a link: {shown}"
        shown += line
    assert shown.startswith(RISK), "the risk is said first, before anything is asked or linked"
    signal.scan(ACCOUNT.number)
    assert process.wait(timeout=30) == ExitCode.ANSWERED
    answer = Connected.model_validate_json(process.stdout.read())
    assert (answer.identity, answer.section["owner"]) == (identity(ACCOUNT.number), OWNER.number)


def test_what_isnt_a_number_is_refused_before_anything_runs(signal: FakeSignal, tmp_path: Path) -> None:
    process = connect_program("lnk-signal", _channel(tmp_path))
    out, err = process.communicate("call me maybe\n", timeout=20)
    assert process.returncode == ExitCode.FAILED
    assert "doesn't look like a phone number" in json.loads(out)["error"]
    assert "Traceback" not in err
    assert signal.started == [], "signal-cli never ran"


def test_cli_link_links_into_a_harness_home(signal: FakeSignal, tmp_path: Path) -> None:
    home = tmp_path / "harness-home"
    process = subprocess.Popen(
        ["lnk-signal", "cli", "link", "--into", str(home)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None and process.stdout is not None
    while "sgnl://" not in process.stderr.readline():
        pass
    signal.scan(ACCOUNT.number)
    assert process.wait(timeout=30) == ExitCode.ANSWERED
    assert json.loads(process.stdout.read()) == {"ok": True, "detail": ACCOUNT.number}
    assert signal.started[0].option("--config") == str(home / "device")
