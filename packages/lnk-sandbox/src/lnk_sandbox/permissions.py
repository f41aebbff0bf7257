"""What each permission opens, as it works on each OS, and which are on for an agent.

Only this machine's OS is shown to a person (`permissions`, a question, a grant): another OS's
description would make them reason about a machine they aren't on. A grant naming a permission
is read and taken on every OS, since an agent's grants move with it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from link_plugin.permissions import DEFAULT_ON, Permission

TYPE_CHECKING = False  # `typing` isn't loaded on `grants --json`'s path (link_plugin.records)
if TYPE_CHECKING:
    from typing import Literal

    from link_plugin.sandbox import Permissions

    OS = Literal["linux", "macos"]

_WHAT: dict[OS, dict[Permission, str]] = {
    "linux": {
        Permission.NETWORK: (
            "The internet through the agent's proxy: ports 443 and 80 and the endpoints you name "
            "(tcp HOST:PORT), only the agent's hosts when it lists any; never this machine or its networks."
        ),
        Permission.DEVELOPER_TOOLS: (
            "The machine's toolchains beyond the base system, read-only: /usr/local, /opt, and the "
            "toolchains in your home (rustup, cargo's programs, pyenv, nvm, uv's Pythons)."
        ),
        Permission.OPEN: (
            "Your desktop session: the display (X11, Wayland) and the session bus, so it can open files and "
            "links in your apps. Through the session bus a program can ask your session to start others outside "
            "the sandbox: give it only to a harness you'd trust without one."
        ),
        Permission.READ_HOME: (
            "Your home folder, read-only; never Link's settings (~/.config/lnk) or another agent's folder."
        ),
        Permission.LOCALHOST: "This machine's loopback ports (127.0.0.1, ::1), through the proxy.",
        Permission.LAN: (
            "The network as it is, without the proxy or a network of its own: this machine's ports, "
            "your local network and every port on the internet. The agent's host list doesn't hold."
        ),
        Permission.UNSANDBOXED: "No sandbox at all: it reads and writes all you can.",
    },
    "macos": {
        Permission.NETWORK: (
            "The internet through the agent's proxy, its only allowed connection: ports 443 and 80 and the "
            "endpoints you name, only the agent's hosts when it lists any; never this Mac or its networks."
        ),
        Permission.DEVELOPER_TOOLS: "Xcode's tools and the command line tools (xcrun, clang, git), read-only.",
        Permission.OPEN: "Opening files, links and apps with Launch Services (`open`).",
        Permission.READ_HOME: (
            "Your home folder, read-only; never Link's settings (~/.config/lnk) or another agent's folder."
        ),
        Permission.LOCALHOST: "This Mac's loopback ports, through the proxy.",
        Permission.LAN: (
            "The network as it is, without the proxy: this Mac's ports, your local network and every port on "
            "the internet. The agent's host list doesn't hold."
        ),
        Permission.UNSANDBOXED: "No sandbox at all: it reads and writes all you can.",
    },
}


def this_os() -> OS:
    return "macos" if sys.platform == "darwin" else "linux"


def sandbox_mode() -> str:
    """What sandboxes here: `Grants.mode` when a sandbox runs."""
    return "seatbelt" if this_os() == "macos" else "bubblewrap"


def what(name: str, os_name: OS | None = None) -> str:
    """What a permission opens on this OS (or the one named)."""
    return _WHAT[os_name or this_os()][Permission(name)]


def listing(os_name: OS | None = None) -> Permissions:
    from link_plugin.sandbox import PermissionInfo, Permissions

    chosen = os_name or this_os()
    return Permissions(
        os=chosen,
        permissions=[
            PermissionInfo(name=p.value, on_by_default=p in DEFAULT_ON, what=_WHAT[chosen][p]) for p in Permission
        ],
    )


def effective(allow: Iterable[str], deny: Iterable[str]) -> set[str]:
    """The permissions on: the defaults and what was allowed, less what was denied."""
    return ({p.value for p in DEFAULT_ON} | set(allow)) - set(deny)
