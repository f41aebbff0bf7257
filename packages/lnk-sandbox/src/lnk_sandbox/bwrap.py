"""A policy as bubblewrap's arguments (Linux).

The sandbox gets new user, PID, IPC, UTS and (unless lan) network namespaces, no capabilities
(even as root), no further user namespaces, a new session (no terminal to push keystrokes into)
and dies with its parent. Its root is empty but for what is bound: the system read-only, with
whatever in /etc only its owner may read hidden, its own /proc, /dev and /tmp, and the policy's
folders. Link's settings folder and the agents' folder are hidden wherever they'd show through
a bound folder, and the agent's own folders are bound again on top.

Only the system's own folders (root's, read-only in every sandbox, so none can change them) and
the run's socket folder (in Link's settings, which no sandbox sees) go to bubblewrap by path.
Everything else it binds by the descriptor the policy opened (`--bind-fd`, `--ro-bind-fd`): it
mounts the folder the descriptor names and checks that what it mounted is that folder ("Race
condition binding dirfd" otherwise), and no sandbox can rename a folder on the way to one
(`policy.py`), so a sandbox is shown what the policy checked. bubblewrap closes each descriptor
once it is bound: none reaches the command. Every sandbox gets Link's seccomp filter
(`seccomp/`), handed over as a descriptor too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.records import NamedTuple
from lnk_sandbox.policy import Bind, Policy, interpreter, within

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
INSIDE = Path("/run/lnk")
"""Where the relay and the proxy's sockets show inside: read-only, so nothing inside replaces them."""
RELAY = INSIDE / "relay.pyc"
INSTALL = (
    "Install bubblewrap: sudo apt-get install bubblewrap (Debian, Ubuntu), sudo dnf install bubblewrap "
    "(Fedora), sudo pacman -S bubblewrap (Arch). lnk never runs an agent without a sandbox instead."
)


def bwrap() -> str:
    """bubblewrap's program, found on PATH as a shell finds it."""
    for folder in os.get_exec_path():
        program = os.path.join(folder, "bwrap")
        if os.path.isfile(program) and os.access(program, os.X_OK):
            return program
    raise LinkError("bubblewrap (bwrap) isn't installed, and lnk runs nothing without its sandbox.", INSTALL)


def _unreadable(folder: str, found: list[Path]) -> None:
    """Entries only their owner may read: hidden, since a sandbox run as root would be their owner.
    A symbolic link is never one (its own mode lets everyone read it; what it names is judged
    where it is), so links, most of /etc, are passed over without a look at their mode."""
    try:
        entries = os.scandir(folder)
    except OSError:
        return
    with entries:
        for entry in entries:
            if entry.is_symlink():
                continue
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            directory = entry.is_dir(follow_symlinks=False)
            if not mode & 0o004 or (directory and not mode & 0o001):
                found.append(Path(entry.path))
            elif directory:
                _unreadable(entry.path, found)


def hidden_in_etc() -> list[Path]:
    found: list[Path] = []
    _unreadable("/etc", found)
    return found


class Plumbing(NamedTuple):
    """What crosses into the sandbox besides its folders."""

    relay_fd: int
    """A file holding the relay's code (`policy.compiled`), shown read-only at /run/lnk/relay.pyc."""
    seccomp_fd: int
    """A file holding Link's seccomp filter (`seccomp.program()`), loaded by bubblewrap on every
    sandbox just before the relay starts."""
    sockets: Path | None = None
    """The folder holding the proxy's and forwards' unix sockets, shown at /run/lnk/out."""
    accept: Sequence[tuple[int, int]] = ()
    """(fd, port): a listening socket of this machine's loopback for each published port."""
    info_fd: int | None = None


def relay_arguments(policy: Policy, plumbing: Plumbing) -> list[str]:
    """The relay's arguments (`relay.main`): `listen PORT SOCKET` and `accept FD PORT` for each,
    then `--` and the command. Written here, so a start never loads the relay's module outside."""
    listen: list[tuple[int, str]] = []
    if plumbing.sockets is not None:
        if policy.rules is not None:
            listen.append((policy.proxy_port, str(INSIDE / "out" / "proxy.sock")))
        listen += [(port, str(INSIDE / "out" / f"port-{port}.sock")) for port in policy.forwards]
    words = [word for port, target in listen for word in ("listen", str(port), target)]
    words += [word for fd, port in plumbing.accept for word in ("accept", str(fd), str(port))]
    return [*words, "--", *policy.argv]


def command(policy: Policy, plumbing: Plumbing) -> list[str]:
    """What bubblewrap runs inside: the relay, which starts the policy's command."""
    return [interpreter(), "-I", "-S", str(RELAY), *relay_arguments(policy, plumbing)]


def options(policy: Policy, plumbing: Plumbing) -> list[str]:
    """Every option of `bwrap` before `--`, in order."""
    args = [
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        "lnk",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    if policy.namespace:
        args.append("--unshare-net")
    visible: list[Path] = []
    for name in SYSTEM:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
            visible.append(path)
    # Kernel settings check only that the writer is root, never a capability: read-only, or a sandbox
    # run as root would set the machine's (its core_pattern runs a program outside any sandbox).
    args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
    args += ["--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger"]
    args += ["--dev", "/dev", "--tmpfs", "/tmp"]
    binds = [*policy.binds, *policy.interpreter]
    binds += [Bind(path, "hide") for path in hidden_in_etc()]
    visible += [bind.path for bind in binds if bind.access != "hide"]
    masks: list[Path] = []
    # Parents before children: a folder bound later inside one bound earlier shows on top of it.
    for bind in sorted(binds, key=lambda b: len(b.path.parts)):
        if bind.access == "hide":
            if not any(within(bind.path, shown) for shown in visible):
                continue
            if bind.path.is_dir():
                args += ["--tmpfs", str(bind.path)]
                masks.append(bind.path)
            else:
                args += ["--ro-bind", "/dev/null", str(bind.path)]
        elif bind.fd is None:
            raise LinkError(f"{bind.path} would be bound by its path, which a sandbox may have changed.")
        else:
            flag = "--bind-fd" if bind.access == "rw" else "--ro-bind-fd"
            args += [flag, str(bind.fd), str(bind.path)]
    if plumbing.sockets is not None:
        args += ["--ro-bind", str(plumbing.sockets), str(INSIDE / "out")]
    args += ["--ro-bind-data", str(plumbing.relay_fd), str(RELAY)]
    for mask in masks:
        args += ["--remount-ro", str(mask)]
    args += ["--remount-ro", "/", "--chdir", str(policy.cwd)]
    for name, value in sorted(policy.env.items()):
        args += ["--setenv", name, value]
    if plumbing.info_fd is not None:
        args += ["--info-fd", str(plumbing.info_fd)]
    return [*args, "--seccomp", str(plumbing.seccomp_fd)]
