"""Whether a lease's holder is provably gone, so the next taker finishes its turn at once.

A lease lapses `[turns] lapse` seconds after its holder last renewed it: that is how a holder that
died is told from one that is only slow. Waiting out the lapse is right when nothing better can
be known, but a harness killed mid-answer and started again at once would keep its owner waiting
a minute. So a holder also keeps a file locked for as long as it holds the lease:
`turn.<token>.lock` beside `turn.json`, locked with flock, which the kernel lets go the moment the
process ends, however it ends. A taker that can lock that file itself knows the holder is gone.

Why a lock and not the holder's pid: Link runs the harness in a sandbox with a PID namespace of
its own, new at every start, so a restarted harness can't look up the pid its dead predecessor
had (its namespace is gone with it), and a pid is reused. A lock on a file both reach is seen
the same from every namespace, and belongs to the open file, never to a number.

A lock says something only within one kernel (on a folder shared between machines, another
machine's lock may not show here), so the lease also records the holder's boot id
(/proc/sys/kernel/random/boot_id) and its machine id (/etc/machine-id), and a taker trusts the
lock only when the boot is its own. A lease from this machine but an earlier boot belongs to a
process that ended with that boot. A lease from another machine, or one that can't be checked
(no boot id: not Linux; a lease an older harness wrote), lapses as before.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from dataclasses import dataclass
from functools import cache
from pathlib import Path

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
MACHINE_IDS = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


@dataclass(frozen=True)
class Here:
    """This machine and this boot of it, as a lease records its holder's."""

    machine: str | None
    boot: str | None


def _first_line(*paths: Path) -> str | None:
    for path in paths:
        try:
            line = path.read_text().strip()
        except OSError:
            continue
        if line:
            return line
    return None


@cache
def here() -> Here:
    return Here(machine=_first_line(*MACHINE_IDS), boot=_first_line(BOOT_ID))


def lock_path(folder: Path, token: str) -> Path:
    return folder / f"turn.{token}.lock"


class HeldLock:
    """The lock a turn keeps while it holds the lease; its process ending lets it go."""

    def __init__(self, folder: Path, token: str, fd: int) -> None:
        self.path = lock_path(folder, token)
        self.token = token
        self._fd = fd

    @classmethod
    def take(cls, folder: Path) -> HeldLock | None:
        """A new lock for a new holder, or None where the file system locks nothing (the lapse decides)."""
        token = secrets.token_hex(8)
        try:
            fd = os.open(lock_path(folder, token), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            lock_path(folder, token).unlink(missing_ok=True)
            return None
        return cls(folder, token, fd)

    def release(self) -> None:
        """The turn let go: the file goes, then the lock (a taker reads the lease, never a bare file)."""
        self.path.unlink(missing_ok=True)
        os.close(self._fd)

    @staticmethod
    def forget(folder: Path, token: str) -> None:
        """The lock file of a holder whose lease was taken from it: the lease no longer names it."""
        lock_path(folder, token).unlink(missing_ok=True)


def gone(folder: Path, machine: str | None, boot: str | None, token: str | None) -> bool:
    """Whether the holder a lease names (its machine, boot and lock) has provably ended."""
    ours = here()
    if boot is None or ours.boot is None:
        return False
    if boot != ours.boot:
        # This machine started again since the holder took the lease: nothing of that boot runs.
        return ours.machine is not None and machine == ours.machine
    if token is None:
        return False
    try:
        fd = os.open(lock_path(folder, token), os.O_RDWR)
    except OSError:
        return False  # no lock to try (taken away by hand?): only the lapse can tell
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: the holder lives
    finally:
        os.close(fd)
    return True
