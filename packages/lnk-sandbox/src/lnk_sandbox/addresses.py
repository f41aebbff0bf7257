"""This machine's own addresses, as its kernel lists them: the proxy refuses each, whatever network
it is on (`hosts.refusal` judges them with everything else)."""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path

from lnk_sandbox.hosts import IP


def _address(text: str) -> IP | None:
    try:
        return ipaddress.ip_address(text.partition("%")[0])  # its zone, if any, isn't part of it
    except ValueError:
        return None


def _linux_addresses() -> set[IP]:
    found: set[IP] = set()
    last = ""
    try:
        for line in Path("/proc/net/fib_trie").read_text().splitlines():
            text = line.strip()
            if text.startswith("|--"):
                last = text[3:].strip()
            elif text.startswith("/32 host LOCAL") and last:
                found.add(ipaddress.IPv4Address(last))
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            raw = line.split()[0]
            found.add(ipaddress.IPv6Address(int(raw, 16)))
    except (OSError, ValueError):
        pass
    return found


def this_machine() -> frozenset[IP]:
    """This machine's own addresses, which the proxy refuses whatever network they are on."""
    found = _linux_addresses() if sys.platform.startswith("linux") else set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM):
            address = _address(str(info[4][0]))
            if address is not None:
                found.add(address)
    except OSError:
        pass
    return frozenset(found)
