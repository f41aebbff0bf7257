"""Starting bubblewrap with the descriptors it is handed and no other, without `subprocess`.

`subprocess` costs every sandbox's start its import and those it brings (`signal`, `threading`,
`selectors`, whose enums are built at import), several milliseconds of a start otherwise spent
on nothing. `os.posix_spawn` starts a program as well, but closes nothing on its own: a
descriptor this process inherited without close-on-exec (from whatever started it) would reach
bubblewrap, and through it the command. So every such descriptor is closed in the child
explicitly, as `subprocess`'s `close_fds` does; those Python opens are close-on-exec already.
The descriptors handed over are inheritable only while their program starts, one start at a
time in a process: another sandbox started on another thread never finds them open.
"""

from __future__ import annotations

import _thread
import os
from collections.abc import Sequence

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    import signal as _signal  # the same functions, as typeshed knows them
    from typing import IO, Any

    Stream = IO[Any] | int | None
    """What a stream of the program is: inherited (None), a descriptor, or an open file."""
else:
    import _signal
DEVNULL = -3
"""`subprocess.DEVNULL`'s value, which callers pass for a stream that reads and writes nothing."""
SIGNALS_AT_DEFAULT = ("SIGPIPE", "SIGXFSZ")
"""Python ignores these; the program gets them at their default, as `subprocess` gives them."""
_one_at_a_time = _thread.allocate_lock()


def spawn(argv: Sequence[str], *, pass_fds: Sequence[int], streams: Sequence[Stream]) -> int:
    """Start `argv` (a path, not looked up) with `streams` as its stdin, stdout and stderr and
    `pass_fds` open at their numbers, every other descriptor closed, in a process group of its
    own. Its pid; OSError when it couldn't be started."""
    actions: list[tuple[int, ...]] = []
    devnull = None
    try:
        for target, stream in enumerate(streams):
            if stream is None:
                continue
            if stream == DEVNULL:
                if devnull is None:
                    devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
                fd = devnull
            else:
                fd = stream if isinstance(stream, int) else stream.fileno()
            actions.append((os.POSIX_SPAWN_DUP2, fd, target))
        kept = set(pass_fds)
        with _one_at_a_time:
            try:
                for fd in kept:
                    os.set_inheritable(fd, True)
                actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited() if fd > 2 and fd not in kept]
                return os.posix_spawn(
                    argv[0],
                    list(argv),
                    os.environ,
                    file_actions=actions,
                    setpgroup=0,
                    setsigdef=[getattr(_signal, name) for name in SIGNALS_AT_DEFAULT],
                )
            finally:
                for fd in kept:
                    os.set_inheritable(fd, False)
    finally:
        if devnull is not None:
            os.close(devnull)


def _inherited() -> list[int]:
    """This process's descriptors that an exec would keep open."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if os.get_inheritable(fd):
                found.append(fd)
        except OSError:  # the listing's own descriptor, closed since
            continue
    return found
