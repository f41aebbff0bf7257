"""A body far over a server's cap, sent in chunks with no length, and what it cost the server's memory.

    with Growth(pid) as growth:
        response = flood(client, "/v1/chat/completions", headers=..., size=200 * MiB)
    assert response.status_code == 413 and growth.grew < 6 * MiB

`Growth` resets the process's peak resident size (/proc/<pid>/clear_refs) and reads it again
after, so what it measures is the most the server held while the body came, however briefly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx

MiB = 1024 * 1024
PIECE = 64 * 1024


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak since the last reset) of `pid`, in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) * 1024
    return found


class Growth:
    """How far above its size at the start a process's resident memory went, at its peak."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before = 0
        self.peak = 0

    def __enter__(self) -> Growth:
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # the peak starts again from now
        self.before = memory(self.pid)["VmRSS"]
        return self

    def __exit__(self, *exc: object) -> None:
        self.peak = memory(self.pid)["VmHWM"]

    @property
    def grew(self) -> int:
        return max(0, self.peak - self.before)


def pieces(size: int) -> Iterator[bytes]:
    """`size` bytes in pieces, made as they are sent: the sender never holds the body whole."""
    piece = b"x" * PIECE
    for _ in range(size // PIECE):
        yield piece


def flood(client: httpx.Client, path: str, *, size: int, headers: dict[str, str] | None = None) -> httpx.Response:
    """POST `size` bytes to `path` chunked (no Content-Length), and the server's answer.

    A server that stops reading and answers mid-body is read all the same (httpx reads the
    answer after a write the server cut short)."""
    return client.post(path, content=pieces(size), headers=headers or {})
