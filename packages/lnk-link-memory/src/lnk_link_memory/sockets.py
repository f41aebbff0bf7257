"""Where an owner's engine listens, and what a session tells it first.

One engine per owner: its unix socket is in a folder of that owner's alone, named by a hash of
the owner, beside the agents' root (`~/Link/.link-memory/<hash>/` for `~/Link/Agents`), so every
agent of one owner finds the same engine and two owners never share one. Not inside the agents'
root, where a sandbox shows nothing but agents' folders; and each session's sandbox is given the
owner's folder alone, never another owner's socket.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

RUNTIME = ".link-memory"
_SHORT = 100
"""Past about this length a unix socket's path doesn't fit its address: it is reached through a handle."""


class Hello(BaseModel):
    """The first line a session sends its engine: which agent it serves, as Link named it."""

    folder: str
    state: str
    owner: str
    agent_id: str | None = None
    notes: str | None = None
    notes_max: int
    model_server: str | None = None
    embeddings: str | None = None


class Welcome(BaseModel):
    ok: bool
    error: str | None = None
    again: bool = False
    """The engine gave way (it can't see the session's folder) and is ending: start one again."""


def default_owner() -> str:
    return f"{getpass.getuser()}@{socket.gethostname()}"


def engine_socket(folder: Path, owner: str) -> Path:
    """The socket of the owner's engine, for the agent folder `folder` (in the agents' root)."""
    key = hashlib.sha256(owner.encode()).hexdigest()[:16]
    return folder.absolute().parent.parent / RUNTIME / key / "engine.sock"


@contextmanager
def address(path: Path) -> Iterator[str]:
    """An address for bind or connect, short enough whatever the path's length."""
    if len(str(path)) <= _SHORT:
        yield str(path)
        return
    handle = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{handle}/{path.name}"
    finally:
        os.close(handle)
