"""Each agent's block of ports: main keeps its harness's usual ones, every other agent a block from 20000
(or from LNK_PORTS_FROM, so that a second Link on the machine keeps clear of the first).

A block holds as many ports as the harness takes (`ports`) and one more: the agent's proxy, or the
gateway lnk serves its tools and model on when the harness runs without a sandbox.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from pathlib import Path

from link_plugin.errors import LinkError
from lnk.agents import DEFAULT_AGENT, blocks_from

LAST = 65000


def port_free(port: int) -> bool:
    """Nothing listens on the port on this machine's loopback (nor on every address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _overlaps(block: range, others: Iterable[list[int]]) -> bool:
    return any(block.start <= max(other) and min(other) < block.stop for other in others if other)


def choose_block(name: str, size: int, default: int | None, current: list[int], others: list[list[int]]) -> list[int]:
    """The agent's block: main at its harness's default; another where it was when that still fits,
    else the lowest free block from 20000 (`blocks_from`) that no other agent holds."""
    if name == DEFAULT_AGENT and default is not None:
        return list(range(default, default + size))
    if current:
        kept = range(current[0], current[0] + size)
        if not _overlaps(kept, others) and all(port_free(p) for p in kept if p not in current):
            return list(kept)
    first = start = blocks_from()
    while first + size <= LAST:
        block = range(first, first + size)
        if not _overlaps(block, others) and all(port_free(p) for p in block):
            return list(block)
        first += 1
    raise LinkError(f"No block of {size} free ports from {start} on.", "Stop something holding ports there.")


def holder(port: int) -> str | None:
    """The program listening on a loopback port, as `name (pid N)`, when /proc tells."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if not any(os.readlink(f"/proc/{pid}/fd/{fd}") in wanted for fd in fds):
                continue
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        return f"{command[:120]} (pid {pid})"
    return "a program this user can't see"


def check_free(agent: str, ports: list[int]) -> None:
    for port in ports:
        if not port_free(port):
            who = holder(port)
            held = f" by {who}" if who else ""
            raise LinkError(
                f"Port {port} of {agent}'s block ({ports[0]}-{ports[-1]}) is in use{held}.",
                "Stop that program, or start the agent again once it has let the port go.",
            )
