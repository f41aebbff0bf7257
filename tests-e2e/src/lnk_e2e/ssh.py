"""A private sshd on the loopback, for a command run as `ssh localhost COMMAND` runs it.

OpenSSH's own sshd, started by the test with a configuration, host key and authorized key of its
own in a temporary folder: it listens on 127.0.0.1 only, on a port the system gave, takes that
one key and nothing else, and reads nothing of the system's ssh settings. The one thing of the
system it needs is the empty folder sshd runs its unprivileged half in, /run/sshd, which the
system's own service would make at boot; made here when it is missing, and taken away after.

The command runs in a login session as sshd starts one, so the environment it gets is sshd's, not
the test's: `command` names a machine's environment in the command itself (`env -i NAME=VALUE
...`), as a person's shell profile on the other machine would.
"""

from __future__ import annotations

import getpass
import shlex
import socket
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

from lnk_e2e.waiting import wait_for

SSHD = Path("/usr/sbin/sshd")
PRIVSEP = Path("/run/sshd")


class LoopbackSSH:
    def __init__(self, folder: Path, port: int) -> None:
        self.folder = folder
        self.port = port

    def command(self, env: Mapping[str, str], *argv: str) -> list[str]:
        """`ssh localhost` running `argv` in the environment `env` (stdin and stdout carried)."""
        remote = ["env", "-i", *(f"{name}={value}" for name, value in env.items()), *argv]
        return [
            "ssh",
            "-4",
            "-p",
            str(self.port),
            "-i",
            str(self.folder / "client_key"),
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={self.folder / 'known_hosts'}",
            "-o",
            "LogLevel=ERROR",
            f"{getpass.getuser()}@localhost",
            shlex.join(remote),
        ]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def loopback_sshd(folder: Path) -> Iterator[LoopbackSSH]:
    if not SSHD.is_file():
        raise AssertionError(f"{SSHD} isn't here: scripts/host_tools.py installs openssh-server (apt-get).")
    folder.mkdir(parents=True, exist_ok=True)
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key)], check=True)
    (folder / "authorized_keys").write_bytes((folder / "client_key.pub").read_bytes())
    (folder / "authorized_keys").chmod(0o600)
    port = _free_port()
    host = (folder / "host_key.pub").read_text().split()
    (folder / "known_hosts").write_text(f"[localhost]:{port} {host[0]} {host[1]}\n")
    config = folder / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1:{port}\n"
        f"HostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\n"
        f"PidFile {folder / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "PermitRootLogin prohibit-password\nStrictModes no\n"
    )
    made = not PRIVSEP.exists()
    if made:
        PRIVSEP.mkdir(mode=0o755)
    log = (folder / "sshd.log").open("wb")
    sshd = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: sshd.poll() is not None or _answers(port), 60, lambda: f"sshd listening on 127.0.0.1:{port}")
        if sshd.poll() is not None:
            raise AssertionError(f"sshd didn't start:\n{(folder / 'sshd.log').read_text()}")
        yield LoopbackSSH(folder, port)
    finally:
        sshd.terminate()
        sshd.wait(timeout=30)
        log.close()
        if made:
            with suppress(OSError):
                PRIVSEP.rmdir()
