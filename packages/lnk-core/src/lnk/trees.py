"""Folders as Link carries them between places (a move's stream, a backup's archive): paths named
by an adapter or a plugin, read strictly, and walks that never follow a link.

A state path is relative and inside the folder it names ("." for all of it); anything absolute or
with `..` is refused here, once, for every caller. A walk yields folders and regular files by
`lstat`: a symbolic link is reported and never entered, a hard link is a regular file like any other,
and a socket or a fifo is nothing to carry.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from link_plugin.errors import LinkError

HERE = PurePosixPath(".")


def relative_path(text: str) -> PurePosixPath:
    """A state path an adapter or plugin named: relative, inside its folder ("." for all of it)."""
    if text in ("", "."):
        return HERE
    path = PurePosixPath(text)
    if path.is_absolute() or any(p in ("", ".", "..") for p in path.parts):
        raise LinkError(
            f"{text!r} is not a path inside the folder it names.",
            "Nothing was changed. A state path is relative, without '..'.",
        )
    return path


def walk(root: Path, start: PurePosixPath, links: list[str]) -> Iterator[tuple[PurePosixPath, os.stat_result]]:
    """Every folder and regular file under root/start with its lstat, root/start itself included
    unless it is root; each symbolic link met is added to `links`, never followed."""
    try:
        info = os.lstat(root / start)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        links.append(str(start))
        return
    if stat.S_ISREG(info.st_mode):
        yield start, info
        return
    if not stat.S_ISDIR(info.st_mode):
        return
    if start != HERE:
        yield start, info
    with os.scandir(root / start) as entries:
        names = sorted(entry.name for entry in entries)
    for name in names:
        yield from walk(root, start / name if start != HERE else PurePosixPath(name), links)
