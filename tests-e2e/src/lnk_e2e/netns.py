"""A network of the suite's own, so a stand-in can answer at a provider's real name and a public
address while nothing leaves this machine.

Two network namespaces, made for the run and deleted after it, joined by a veth pair: Link runs in
`inside` (its own loopback, one address on the pair), a stand-in listens in `outside` at a
public-looking address, reached only over that pair. Names resolve through a hosts file bound over
/etc/hosts in the mount namespace of each command run inside, and nowhere else; Link's code runs
unchanged, resolving and connecting as it does on any machine.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

CLONE_NEWNET = 0x40000000
NETNS = Path("/run/netns")


def why_not() -> str | None:
    """Why network namespaces can't be made here, or None when they can."""
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed: apt-get install iproute2"
    return None


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise AssertionError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")


class Namespaces:
    """`inside` (where Link runs, at `inside_address`) and `outside` (at `outside_address`), one link apart."""

    def __init__(self, tag: str, inside_address: str, outside_address: str, prefix: int, hosts: Path) -> None:
        self.inside = f"{tag}-in"
        self.outside = f"{tag}-out"
        self.inside_address = inside_address
        self.outside_address = outside_address
        self.prefix = prefix
        self.hosts = hosts
        """The hosts file commands run inside see as /etc/hosts."""

    def make(self, names: dict[str, str]) -> Namespaces:
        """Both namespaces, the pair between them, and a hosts file naming `names` (name -> address)."""
        for namespace in (self.inside, self.outside):
            _ip("netns", "add", namespace)
            _ip("-n", namespace, "link", "set", "lo", "up")
        # Made inside one namespace and moved: nothing of the pair is ever in this machine's own.
        _ip("-n", self.inside, "link", "add", "lnk0", "type", "veth", "peer", "name", "lnk1")
        _ip("-n", self.inside, "link", "set", "lnk1", "netns", self.outside)
        ends = ((self.inside, "lnk0", self.inside_address), (self.outside, "lnk1", self.outside_address))
        for namespace, device, address in ends:
            _ip("-n", namespace, "addr", "add", f"{address}/{self.prefix}", "dev", device)
            _ip("-n", namespace, "link", "set", device, "up")
        lines = [f"{address} {name}" for name, address in names.items()]
        self.hosts.write_text(Path("/etc/hosts").read_text() + "\n" + "\n".join(lines) + "\n")
        return self

    def remove(self) -> None:
        for namespace in (self.inside, self.outside):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30)

    def prefix_command(self) -> list[str]:
        """What runs a command inside: `ip netns exec` (a mount namespace of its own), the hosts file
        bound over /etc/hosts there, then the command."""
        bind = 'mount --bind "$0" /etc/hosts && exec "$@"'
        return ["ip", "netns", "exec", self.inside, "sh", "-c", bind, str(self.hosts)]

    def listen_outside(self, port: int) -> socket.socket:
        """A listening socket at the outside address, made in the outside namespace (by a thread that
        enters it and ends), served from this process like any other."""
        made: list[socket.socket] = []
        failed: list[BaseException] = []

        def enter_and_listen() -> None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(NETNS / self.outside, os.O_RDONLY)
                try:
                    if libc.setns(fd, CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns")
                finally:
                    os.close(fd)
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind((self.outside_address, port))
                made.append(listener)
            except BaseException as exc:  # said in the test's thread
                failed.append(exc)

        thread = threading.Thread(target=enter_and_listen)
        thread.start()
        thread.join()
        if failed:
            raise failed[0]
        return made[0]
