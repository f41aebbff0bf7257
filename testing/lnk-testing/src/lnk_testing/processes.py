"""A process and everything it started, read from /proc: what a test searches for a key, and what
a benchmark counts the memory and CPU of."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def descendants(pids: Iterable[int]) -> list[int]:
    """The processes and every process below them, each once."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    pending = list(pids)
    while pending:
        current = pending.pop()
        if current not in found:
            found.append(current)
            pending += children.get(current, [])
    return found
