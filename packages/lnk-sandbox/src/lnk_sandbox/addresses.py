"""Which addresses are this machine and its networks: the proxy refuses them after resolution.

An address is judged as the proxy connects to it, never by the name it was asked for, so every
spelling (`2130706433`, `0x7f.1`, `::ffff:127.0.0.1`) and every name resolving here is refused.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path

IP = ipaddress.IPv4Address | ipaddress.IPv6Address

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def literal(host: str) -> IP | None:
    """The address a host names literally (plain dotted or IPv6 notation), if it does."""
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return None


def _embedded(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo, NAT64), which is where it goes."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_loopback(ip: IP) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and (inner := _embedded(ip)) is not None:
        return inner.is_loopback
    return ip.is_loopback


def refusal(ip: IP, *, localhost: bool, this_machine: frozenset[IP] = frozenset()) -> str | None:
    """Why the proxy refuses to connect to `ip`, or None when it may."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(ip.compressed.split("%")[0])
        inner = _embedded(ip)
        if inner is not None:
            reason = refusal(inner, localhost=localhost, this_machine=this_machine)
            return f"{reason} (as {ip.compressed})" if reason else None
    if ip.is_loopback:
        return None if localhost else "this machine (loopback): needs the localhost permission"
    if ip.is_unspecified:
        return "this machine (an unspecified address)"
    if ip in this_machine:
        return "this machine (one of its own addresses)"
    if ip.is_link_local:
        return "a link-local network"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "a carrier-grade NAT network"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private network"
    if not ip.is_global:
        return "an address that isn't on the internet"
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
            address = literal(str(info[4][0]))
            if address is not None:
                found.add(address)
    except OSError:
        pass
    return frozenset(found)
