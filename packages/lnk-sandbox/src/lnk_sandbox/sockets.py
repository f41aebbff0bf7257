"""Unix sockets at paths of any length.

A unix socket's path is limited to about 107 bytes, and Link's settings folder can be deep (a
long home, a test's temporary folder). A longer path is reached through the folder opened on
its own: /proc/self/fd/<n>/<name> names the same place in a few bytes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

LIMIT = 100


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """A path to bind or connect to for `path`, valid inside the block."""
    if len(os.fsencode(path)) <= LIMIT:
        yield str(path)
        return
    folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)
