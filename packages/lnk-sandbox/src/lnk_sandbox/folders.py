"""The folders a sandbox is shown, each opened once without following a link, and bound as opened.

bubblewrap given a path looks it up again when it mounts it, so a check made on the path before
proves nothing: another sandbox of the same agent that writes `Home` can swap `Home/work` for a
link to `../../../..` between the check and the mount, and the next sandbox would be shown the
user's whole home. So a folder is never handed over by path. It is opened exactly once, walked
name by name from a root no sandbox writes (`O_PATH|O_NOFOLLOW` at every step: a link anywhere on
the way is refused, never followed, and `..` is refused before the walk), made there relative to
its opened parent when it is one of the agent's own and missing, checked as opened (what it is,
whose it is, where the kernel says it is), and that descriptor is what bubblewrap binds
(`--bind-fd`). Whatever is swapped in after the open changes nothing the sandbox is shown.

Two walks:

- `beneath`: a folder in the agents' root, walked from the root's own descriptor with no link
  followed at all. Sandboxes write in there, so any link there may be one of theirs.
- `resolved`: a folder outside Link's folders that a request names (a program's folder, the
  Python it runs on, the user's home for read-home). Its links are the user's (a virtual
  environment's `lib64`, a home on another disk) and are followed once, by the kernel, to name the
  real folder; that real path is then walked from `/` with no link followed, so what is opened is
  what was checked, and a link swapped in meanwhile is refused.

Every failure is a `LinkError` saying what was wrong, never an `OSError`.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.records import NamedTuple

O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
"""A descriptor that names a file without reading it (Linux); macOS has none and reads instead."""
STEP = O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
LINK_HINT = "Put the folder back in place of the link (one made from inside a sandbox is refused)."


class Opened(NamedTuple):
    """A folder (or a file) as opened: its descriptor, and the path it was found at."""

    fd: int
    path: Path


def where(fd: int) -> Path | None:
    """Where the kernel says an open descriptor is now; None where this OS can't say."""
    if sys.platform != "linux":
        return None
    return Path(os.readlink(f"/proc/self/fd/{fd}"))


class Folders:
    """The folders one policy opens; all closed together once bubblewrap holds them, or on failure."""

    def __init__(self) -> None:
        self.fds: list[int] = []
        self._roots: dict[Path, Opened] = {}

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()
        self._roots.clear()

    def beneath(self, root: Path, parts: Sequence[str], *, make: bool = False) -> Opened:
        """`root/parts...`, walked from the root's descriptor with no link followed; with `make`,
        each missing folder on the way is made in its opened parent. It must be the user's own:
        a sandbox is shown nothing in there that someone else can change under it."""
        _no_dotdot(root.joinpath(*parts), parts)
        top = self._root(root, make)
        path = top.path.joinpath(*parts)
        here = os.dup(top.fd)
        for index, name in enumerate(parts):
            try:
                child = _step(here, name, top.path.joinpath(*parts[: index + 1]), path, make=make)
            finally:
                os.close(here)
            here = child
        return self._kept(here, path, mine=True)

    def resolved(self, path: Path) -> Opened:
        """A file or folder outside Link's folders: its links followed once to name the real one,
        which is then opened from `/` following none."""
        try:
            real = Path(os.path.realpath(path, strict=True))
        except FileNotFoundError:
            raise LinkError(f"The sandbox is given {path}, which doesn't exist.") from None
        except OSError as exc:
            raise LinkError(f"The sandbox is given {path}, which can't be followed ({exc.strerror}).") from None
        names = real.parts[1:]
        here = _open(None, "/", Path("/"), real, directory=True, changed=True)
        for index, name in enumerate(names):
            last = index == len(names) - 1
            try:
                child = _open(here, name, Path("/", *names[: index + 1]), real, directory=not last, changed=True)
            finally:
                os.close(here)
            here = child
        if stat.S_ISLNK(os.fstat(here).st_mode):
            os.close(here)
            raise _changed(real)
        return self._kept(here, real, mine=False)

    def _root(self, root: Path, make: bool) -> Opened:
        """The root's descriptor, opened once per policy (and made first when asked to make under it)."""
        if root not in self._roots:
            if make:
                try:
                    root.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise LinkError(f"{root} can't be made ({exc.strerror}).") from None
            self._roots[root] = self.resolved(root)
        return self._roots[root]

    def _kept(self, fd: int, path: Path, *, mine: bool) -> Opened:
        """An opened descriptor checked where it is (and whose), then kept until `close`."""
        try:
            now = where(fd)
            owner = os.fstat(fd).st_uid
        except OSError as exc:
            os.close(fd)
            raise LinkError(f"{path} can't be checked ({exc.strerror}).") from None
        if now is not None and now != path:
            os.close(fd)
            raise _changed(path)
        if mine and owner != os.geteuid():
            os.close(fd)
            raise LinkError(
                f"{path} belongs to another user (uid {owner}): a sandbox is shown only folders of the "
                "user running it there.",
                "Give the folder back to you (chown), or run Link as the user it belongs to.",
            )
        self.fds.append(fd)
        return Opened(fd, path)


def _step(parent: int, name: str, here: Path, path: Path, *, make: bool) -> int:
    """One name further down, made first when missing and asked to."""
    if make and _kind(parent, name) is None:
        try:
            os.mkdir(name, dir_fd=parent)
        except FileExistsError:
            pass  # made meanwhile: opened below like anything else, so a link made meanwhile is refused too
        except OSError as exc:
            raise LinkError(f"{here} can't be made ({exc.strerror}).") from None
    return _open(parent, name, here, path, directory=True, changed=False)


def _open(parent: int | None, name: str, here: Path, path: Path, *, directory: bool, changed: bool) -> int:
    """`name` in an opened folder, following no link. With `changed`, the path was just resolved,
    so a link or a missing name there means it changed meanwhile."""
    try:
        return os.open(name, STEP | (os.O_DIRECTORY if directory else 0), dir_fd=parent)
    except OSError as exc:
        if changed and exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            raise _changed(path) from None
        raise _refused(exc, parent, name, here, path) from None


def _no_dotdot(path: Path, parts: Sequence[str]) -> None:
    if any(part in ("", ".", "..") or "/" in part for part in parts):
        raise LinkError(f"{path} has '..' (or an empty name) in it: a sandbox is given folders by their own names.")


def _kind(parent: int, name: str) -> int | None:
    """What is at `name` in an opened folder (its mode), without following it; None: nothing."""
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return 0


def _refused(exc: OSError, parent: int | None, name: str, here: Path, path: Path) -> LinkError:
    if exc.errno == errno.ENOENT:
        return LinkError(f"The sandbox is given {path}, which doesn't exist ({here} is missing).")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        mode = _kind(parent, name) if parent is not None else None
        if mode is not None and stat.S_ISLNK(mode):
            return LinkError(
                f"{path} goes through a symbolic link at {here}: the sandbox follows none there.", LINK_HINT
            )
        return LinkError(f"{path} goes through {here}, which isn't a folder.")
    return LinkError(f"{path} can't be opened at {here} ({exc.strerror}).")


def _changed(path: Path) -> LinkError:
    return LinkError(
        f"{path} changed while the sandbox was being made (a folder moved, or a link appeared).",
        "Run it again; if it keeps happening, something is swapping that folder.",
    )
