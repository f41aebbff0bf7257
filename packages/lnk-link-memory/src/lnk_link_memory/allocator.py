"""How a long-running memory process asks glibc's allocator to behave, so its size stays steady.

Two settings, both made once, as early as the process can:

- Large blocks (a model run's tensors) are always mapped, so they go back to the system when freed.
  glibc raises its mapping threshold after each large free, then serves the next runs from a heap
  it never shrinks: the process would grow with every run.
- Two arenas, not eight per core. Every thread that allocates while another does gets an arena of
  its own, and each arena keeps what its thread freed: an engine serving ten agents runs fifty
  threads (scans, embedding, workers answering calls), and held 25 MiB more in arenas than with
  two. The threads here mostly wait on SQLite and the model, so they seldom contend for one.

Elsewhere than glibc there is nothing to set.
"""

from __future__ import annotations

import ctypes
import functools

_M_ARENA_MAX = -8
_M_MMAP_THRESHOLD = -3
_ARENAS = 2
_MAPPED_FROM = 1 << 20


@functools.cache
def steady() -> None:
    """Set both (once a process: later calls do nothing)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: nothing to set
    libc.mallopt(_M_MMAP_THRESHOLD, _MAPPED_FROM)
    libc.mallopt(_M_ARENA_MAX, _ARENAS)
