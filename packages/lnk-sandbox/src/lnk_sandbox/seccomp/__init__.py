"""Link's seccomp filter, loaded by bubblewrap on every sandbox (`--seccomp FD`).

The namespaces, the read-only system and the proxy confine a sandbox; this filter takes away the
kernel's ways around them: the session's keyrings, typing into a terminal (TIOCSTI), io_uring,
new namespaces and mounts, attaching to processes, sockets past the network Link gives, and the
rest listed with a reason each in `rules.toml` beside this file (and in the README).

The filter is a classic-BPF program per architecture (`x86_64.bpf`, `aarch64.bpf`), made from
`rules.toml` with libseccomp by `scripts/seccomp_tables.py` and shipped as it is: a sandbox reads
a few hundred bytes into a file in memory, and needs neither libseccomp nor a compiler. A machine
of another architecture is refused rather than run without it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from link_plugin.errors import LinkError

ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
"""The kernel's name for the machine (`uname -m`), as each table is named."""


@functools.cache
def program(machine: str | None = None) -> bytes:
    """The filter for this machine (or the one named), as the bytes bubblewrap reads from `--seccomp`."""
    machine = machine or os.uname().machine
    arch = ARCHES.get(machine.lower())
    if arch is None:
        raise LinkError(
            f"lnk-sandbox has no seccomp filter for this machine's architecture ({machine}), and runs no "
            "sandbox without one.",
            f"Sandboxes run on {', '.join(sorted(set(ARCHES.values())))}.",
        )
    return Path(__file__).with_name(f"{arch}.bpf").read_bytes()
