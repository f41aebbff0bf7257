"""One turn per conversation, whichever process runs it: a lease in `turn.json`.

The holder renews it every `[turns] renew` seconds; one not renewed for `[turns] lapse` seconds
belongs to a process that died, and the next taker finishes its turn. A holder that is provably
gone (holders.py: the lock it keeps while it lives is free) is taken from at once, without the
lapse. Every read-and-write of the lease happens under an exclusive lock on `turn.take`, so two
processes never both take a lapsed lease. The lock is the kernel's (flock), released when its
holder dies, so a crash never leaves it taken. Nothing awaits while the lock is held.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import socket
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from lnk_harness.holders import HeldLock, gone, here

_PROCESS = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"


def replace(path: Path, data: bytes) -> None:
    """Write a file whole, by renaming: readers see the old one or the new one, never half.

    Not flushed to the disk: what's written this way (the lease, the transcript) is made again
    from the events, so a lost write costs nothing.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@contextmanager
def flocked(path: Path) -> Iterator[int]:
    """Hold an exclusive lock on `path` (made if missing); the kernel lets go if the holder dies."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def new_holder() -> str:
    """A name for one turn of this process: two turns never share one."""
    return f"{_PROCESS}/{secrets.token_hex(4)}"


class Lease(BaseModel):
    holder: str
    taken: float
    renewed: float
    closing: bool = False
    """The turn has its answer and is only delivering it: a new message waits for the next turn."""
    stop: bool = False
    """A message asked the running turn to stop ([turns] busy = stop)."""
    answer: int | None = None
    """The message whose number names the running turn's answer (its Link-Answer-Id)."""
    machine: str | None = None
    """The holder's machine id, boot id and lock (holders.py); None in a lease an older harness wrote."""
    boot: str | None = None
    lock: str | None = None

    def lapsed(self, lapse: float, now: float) -> bool:
        return now - self.renewed > lapse


@dataclass(frozen=True)
class Taken:
    holder: str
    lapsed: Lease | None
    """The lease a dead holder left, whose turn the taker finishes first."""


_HELD: dict[str, HeldLock] = {}
"""The lock each turn of this process keeps while it holds its lease, by holder."""


class TurnLease:
    def __init__(self, folder: Path, lapse: float) -> None:
        self.folder = folder
        self.path = folder / "turn.json"
        self._lock_path = folder / "turn.take"
        self.lapse = lapse

    def locked(self) -> AbstractContextManager[int]:
        return flocked(self._lock_path)

    def read(self) -> Lease | None:
        try:
            return Lease.model_validate_json(self.path.read_bytes())
        except FileNotFoundError:
            return None
        except ValidationError:
            # A lease nobody can read holds nothing: treat it as lapsed long ago.
            return Lease(holder="?", taken=0.0, renewed=0.0)

    def _write(self, lease: Lease) -> None:
        # In place, under the lock: every decision about the lease reads it under the lock too,
        # and a lease a crash left half written reads as lapsed, which its dead holder's is.
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, lease.model_dump_json().encode())
        finally:
            os.close(fd)

    def try_take(self, answer: int | None = None) -> Taken | Lease:
        """Take the lease when it is free, lapsed or its holder is gone; otherwise the live lease."""
        with self.locked():
            return self.take_locked(answer)

    def take_locked(self, answer: int | None = None) -> Taken | Lease:
        """As try_take, under the lock already held. `answer` names the new turn's answer; without
        one, a turn taken from a dead holder keeps that holder's name for it."""
        now = time.time()
        current = self.read()
        if current is not None and not current.lapsed(self.lapse, now) and not self.gone(current):
            return current
        holder = new_holder()
        held = HeldLock.take(self.folder)
        if held is not None:
            _HELD[holder] = held
        ours = here()
        named = answer if answer is not None or current is None else current.answer
        lease = Lease(
            holder=holder,
            taken=now,
            renewed=now,
            answer=named,
            machine=ours.machine,
            boot=ours.boot,
            lock=held.token if held is not None else None,
        )
        self._write(lease)
        if current is not None and current.lock is not None:
            HeldLock.forget(self.folder, current.lock)
        return Taken(holder=holder, lapsed=current)

    def gone(self, lease: Lease) -> bool:
        """Whether the lease's holder has provably ended (holders.py), so its lapse needn't be waited."""
        return gone(self.folder, lease.machine, lease.boot, lease.lock)

    def renew(self, holder: str) -> Lease | None:
        """Renew it for `holder`; None when the lease is no longer theirs."""
        with self.locked():
            current = self.read()
            if current is None or current.holder != holder:
                return None
            current.renewed = time.time()
            self._write(current)
            return current

    def close_locked(self, holder: str) -> None:
        """The turn has its answer: a message from now on waits for the next turn."""
        current = self.read()
        if current is not None and current.holder == holder and not current.closing:
            current.closing = True
            self._write(current)

    def close(self, holder: str) -> None:
        with self.locked():
            self.close_locked(holder)

    def ask_stop_locked(self) -> None:
        """Ask the running turn to stop ([turns] busy = stop)."""
        current = self.read()
        if current is not None and not current.stop:
            current.stop = True
            self._write(current)

    def hand_over(self, holder: str) -> None:
        """Leave the lease lapsed already, for the next taker to finish the turn without waiting."""
        with self.locked():
            current = self.read()
            if current is not None and current.holder == holder:
                current.renewed = 0.0
                self._write(current)
        self.release(holder)

    def let_go(self, holder: str) -> None:
        with self.locked():
            current = self.read()
            if current is not None and current.holder == holder:
                self.path.unlink(missing_ok=True)
        self.release(holder)

    @staticmethod
    def release(holder: str) -> None:
        """Let go of the lock the holder kept (its lease let go, handed over, or taken from it)."""
        held = _HELD.pop(holder, None)
        if held is not None:
            held.release()
