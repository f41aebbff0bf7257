"""What runs on this machine, read from /proc as `ps` would: to find the harness, to look into its
environment, and to prove that nothing of a stopped agent runs on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Process:
    pid: int
    parent: int
    argv: list[str]
    environ: bytes

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def mentions(self, text: str) -> bool:
        return text in self.command or text.encode() in self.environ


def _read(pid: int) -> Process | None:
    folder = Path("/proc") / str(pid)
    try:
        stat = (folder / "stat").read_text()
        argv = (folder / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command's name: state, parent, ...
    if fields[0] == "Z":  # a zombie has ended; only its parent hasn't read its status yet
        return None
    try:
        environ = (folder / "environ").read_bytes()
    except OSError:
        environ = b""
    return Process(pid, int(fields[1]), [a.decode(errors="replace") for a in argv if a], environ)


def running() -> list[Process]:
    found = (_read(int(entry.name)) for entry in Path("/proc").iterdir() if entry.name.isdigit())
    return [process for process in found if process is not None]


def descendants(pid: int) -> list[Process]:
    """The process and every process under it."""
    everything = running()
    children: dict[int, list[Process]] = {}
    for process in everything:
        children.setdefault(process.parent, []).append(process)
    found = [p for p in everything if p.pid == pid]
    pending = list(found)
    while pending:
        below = children.get(pending.pop().pid, [])
        found += below
        pending += below
    return found


def mentioning(text: str) -> list[Process]:
    """Processes whose command line or environment names `text` (a machine's temporary root)."""
    return [process for process in running() if process.mentions(text)]


def in_sandboxes(runner: int) -> list[Process]:
    """Every process in the sandboxes of the agent whose runner (the `process` of its status) is
    `runner`: below each bubblewrap its supervisor started."""
    supervisor = next(p.parent for p in running() if p.pid == runner)
    sandboxes = [p for p in descendants(supervisor) if Path(p.argv[0]).name == "bwrap"]
    return [p for sandbox in sandboxes for p in descendants(sandbox.pid)]
