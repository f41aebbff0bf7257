"""A policy as a Seatbelt profile (macOS), run with sandbox-exec.

macOS has no network namespaces, so the profile allows connecting only to the proxy's loopback
port (and a local model's); lan allows the network as it is. Rules are read in order and the
last that matches wins, so what is hidden is denied after the folders around it are allowed,
and the agent's own folders are allowed again after that.

A harness's temporary files go to its home's tmp (TMPDIR), with Link's mktemp first on its PATH:
macOS's mktemp without a template uses the per-user temp folder whatever TMPDIR says, which the
profile refuses, since every app shares it.
"""

from __future__ import annotations

from pathlib import Path

from link_plugin.files import write_atomic
from lnk_sandbox.policy import Policy

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
SYSTEM = (
    "/System",
    "/Library",
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/libexec",
    "/usr/share",
    "/private/etc",
    "/private/var/db/timezone",
    "/dev",
)
DEVELOPER = ("/Applications/Xcode.app", "/Library/Developer", "/usr/local", "/opt/homebrew")
DEVICES = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper", "/dev/urandom")

MKTEMP = """#!/bin/sh
# Link's mktemp: without a template, make it in $TMPDIR (the harness's home), never the per-user
# temp folder, which the sandbox refuses. A call with a template goes to /usr/bin/mktemp as it is.
prefix=tmp
directory=
dry=
while [ $# -gt 0 ]; do
  case "$1" in
    -d) directory=-d ;;
    -u) dry=-u ;;
    -q) ;;
    -t) shift; prefix="$1" ;;
    -*) exec /usr/bin/mktemp "$@" ;;
    *) exec /usr/bin/mktemp $directory $dry "$@" ;;
  esac
  shift
done
exec /usr/bin/mktemp $directory $dry "${TMPDIR:?}/$prefix.XXXXXXXXXX"
"""


def _quote(path: Path | str) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rule(action: str, operations: str, filters: list[str]) -> list[str]:
    return [f"({action} {operations} {' '.join(filters)})"] if filters else []


def _paths(paths: list[Path] | tuple[str, ...]) -> list[str]:
    return [f"(subpath {_quote(path)})" for path in paths]


def tmpdir(policy: Policy) -> Path:
    return policy.home / "tmp"


def bin_folder(policy: Policy) -> Path:
    """Where Link's mktemp is, first on the harness's PATH."""
    return policy.home / ".lnk" / "bin"


def profile(policy: Policy) -> str:
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-fork)",
        "(allow process-exec)",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
        "(allow file-read-metadata)",
        '(allow file-read* (literal "/"))',
    ]
    lines += _rule("allow", "file-read*", _paths(SYSTEM))
    lines += _rule("allow", "file-read* file-write*", [f"(literal {_quote(device)})" for device in DEVICES])
    if policy.developer_tools:
        lines += _rule("allow", "file-read*", _paths(DEVELOPER))
    if policy.read_home is not None:
        lines += _rule("allow", "file-read*", _paths([policy.read_home]))
    lines += _rule("allow", "file-read*", _paths([bind.path for bind in policy.interpreter]))
    lines += _rule("deny", "file-read* file-write*", _paths(policy.access("hide")))
    lines += _rule("allow", "file-read*", _paths(policy.access("ro")))
    lines += _rule("allow", "file-read* file-write*", _paths(policy.access("rw")))
    if policy.desktop:
        lines += ["(allow lsopen)", "(allow appleevent-send)"]
    if not policy.namespace:
        lines.append("(allow network*)")
    else:
        ports = ([policy.proxy_port] if policy.rules is not None else []) + policy.forwards
        lines += [f'(allow network-outbound (remote tcp "localhost:{port}"))' for port in ports]
        lines += [f'(allow network-bind network-inbound (local tcp "localhost:{port}"))' for port in policy.publish]
    return "\n".join(lines) + "\n"


def environment(policy: Policy) -> dict[str, str]:
    if policy.mode == "tool":
        return dict(policy.env)
    path = policy.env.get("PATH", "/usr/bin:/bin")
    return {**policy.env, "TMPDIR": str(tmpdir(policy)), "PATH": f"{bin_folder(policy)}:{path}"}


def command(policy: Policy) -> list[str]:
    """sandbox-exec's command line, with a harness's tmp and Link's mktemp in place in its home."""
    if policy.mode != "tool":
        tmpdir(policy).mkdir(parents=True, exist_ok=True)
        write_atomic(bin_folder(policy) / "mktemp", MKTEMP, mode=0o755)
    return [SANDBOX_EXEC, "-p", profile(policy), *policy.argv]
