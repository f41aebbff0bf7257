"""A lease whose holder is provably gone is taken at once; one that can't be checked waits for its lapse."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import Harness, crafted, wait_until

from link_conformance.provider import Reply, StandInProvider
from link_plugin.harness import Turns
from lnk_harness.conversation import Conversation
from lnk_harness.events import MessageIn
from lnk_harness.holders import HeldLock, gone, here
from lnk_harness.lease import Lease, Taken, TurnLease

OTHER_BOOT = "00000000-0000-4000-8000-000000000000"


def lease_file(folder: Path, **fields: object) -> None:
    now = time.time()
    lease = Lease(holder="elsewhere/1/a/b", taken=now, renewed=now, answer=1, **fields)  # type: ignore[arg-type]
    (folder / "turn.json").write_text(lease.model_dump_json())


def test_a_free_lock_on_this_boot_proves_the_holder_gone(tmp_path: Path) -> None:
    ours = here()
    assert ours.boot, "this machine says its boot id"
    held = HeldLock.take(tmp_path)
    assert held is not None
    assert not gone(tmp_path, ours.machine, ours.boot, held.token), "held: the holder lives"
    token = held.token
    held.release()
    HeldLock.take(tmp_path)  # another holder's lock beside it changes nothing
    (tmp_path / f"turn.{token}.lock").touch()  # its file left behind, nobody holding it
    assert gone(tmp_path, ours.machine, ours.boot, token)


def test_what_cannot_be_checked_is_never_taken_for_gone(tmp_path: Path) -> None:
    ours = here()
    assert not gone(tmp_path, ours.machine, None, None), "a lease an older harness wrote"
    assert not gone(tmp_path, ours.machine, ours.boot, None), "no lock named"
    assert not gone(tmp_path, ours.machine, ours.boot, "0123456789abcdef"), "its lock file is missing"
    assert not gone(tmp_path, "another-machine", OTHER_BOOT, "x"), "another machine's"
    assert not gone(tmp_path, None, OTHER_BOOT, "x"), "a machine that can't be told"
    assert gone(tmp_path, ours.machine, OTHER_BOOT, "x") is (ours.machine is not None), "this machine, an earlier boot"


HOLD_IN_A_SANDBOX = """
import sys, time
from pathlib import Path
from lnk_harness.lease import TurnLease
taken = TurnLease(Path(sys.argv[1]), lapse=60.0).try_take()
print(taken.holder, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap for a PID namespace of its own")
def test_a_holder_in_another_pid_namespace_is_known_gone(tmp_path: Path) -> None:
    """As Link runs it: each start of the harness in a sandbox with a PID namespace of its own."""
    argv = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--die-with-parent"]
    holder = subprocess.Popen(
        [*argv, sys.executable, "-c", HOLD_IN_A_SANDBOX, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    name = holder.stdout.readline().strip()
    lease = TurnLease(tmp_path, lapse=60.0)
    try:
        current = lease.try_take()
        assert isinstance(current, Lease) and current.holder == name, "alive in its namespace: it holds"
        assert json.loads((tmp_path / "turn.json").read_text())["boot"] == here().boot
    finally:
        holder.send_signal(signal.SIGKILL)  # the sandbox, and with it everything in its namespace
        holder.wait()
    found: list[Taken] = []

    def taken_now() -> bool:
        taken = lease.try_take()
        if isinstance(taken, Taken):
            found.append(taken)
        return bool(found)

    wait_until(taken_now, timeout=10, what="the lease taken, long before its 60 s lapse")  # the namespace ends
    taken = found[0]
    assert taken.lapsed is not None and taken.lapsed.holder == name
    assert [p.name for p in tmp_path.glob("turn.*.lock")] == [f"turn.{lease.read().lock}.lock"], "its lock forgotten"  # type: ignore[union-attr]
    lease.let_go(taken.holder)
    assert not list(tmp_path.glob("turn.*.lock")) and not (tmp_path / "turn.json").exists()


def waiting_turn(tmp_path: Path, provider: StandInProvider, thread: str, lapse: float) -> tuple[Harness, Conversation]:
    harness, conversation = crafted(tmp_path, provider, thread, Turns(renew=0.2, lapse=lapse))
    conversation.events.append(MessageIn(text="what's the weather?"))
    return harness, conversation


def recovered_at(harness: Harness, timeout: float) -> float:
    """When the answer the restarted harness finished was first handed over."""
    client = harness.client()
    wait_until(lambda: asyncio.run(client.recover()), timeout=timeout, what="the recovered answer")
    return time.time()


def test_a_holder_on_another_machine_waits_for_the_lapse(tmp_path: Path, provider: StandInProvider) -> None:
    harness, conversation = waiting_turn(tmp_path, provider, "kit:elsewhere", lapse=3.0)
    lease_file(conversation.folder, machine="another-machine", boot=OTHER_BOOT, lock="0123456789abcdef")
    renewed = json.loads((conversation.folder / "turn.json").read_text())["renewed"]
    provider.script(Reply(text="Sunny."))
    with harness:
        assert recovered_at(harness, timeout=30) >= renewed + 3.0, "finished only once the lease lapsed"


def test_a_holder_whose_lock_is_held_waits_for_the_lapse(tmp_path: Path, provider: StandInProvider) -> None:
    """Alive (its lock held) but not renewing: only the lapse lets its turn be taken."""
    harness, conversation = waiting_turn(tmp_path, provider, "kit:hung", lapse=3.0)
    held = HeldLock.take(conversation.folder)
    assert held is not None
    ours = here()
    lease_file(conversation.folder, machine=ours.machine, boot=ours.boot, lock=held.token)
    renewed = json.loads((conversation.folder / "turn.json").read_text())["renewed"]
    provider.script(Reply(text="Cloudy."))
    try:
        with harness:
            assert recovered_at(harness, timeout=30) >= renewed + 3.0, "finished only once the lease lapsed"
    finally:
        held.release()


@pytest.mark.skipif(here().machine is None, reason="this machine has no machine id")
def test_a_holder_from_an_earlier_boot_is_taken_at_once(tmp_path: Path, provider: StandInProvider) -> None:
    harness, conversation = waiting_turn(tmp_path, provider, "kit:rebooted", lapse=60.0)
    lease_file(conversation.folder, machine=here().machine, boot=OTHER_BOOT, lock="0123456789abcdef")
    provider.script(Reply(text="Rainy."))
    with harness:
        recovered_at(harness, timeout=20)  # well before the 60 s lapse
