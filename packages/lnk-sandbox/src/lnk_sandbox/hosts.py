"""What the proxy may reach: one grammar for every host asked for, and Link's own table of the
addresses it never reaches.

**The grammar.** A host, wherever a request names it (a CONNECT authority, an absolute
`http://` URI) and wherever a grant lists it, is exactly one of:

- an IPv4 address in its canonical dotted-quad form (`93.184.215.14`: four decimal numbers,
  no leading zeros), never the other spellings a resolver takes (`2130706433`, `0x7f.1`,
  `0177.0.0.1`, `127.1`);
- an IPv6 address in brackets (`[2606:2800::1]`), without a zone (`%eth0`);
- a DNS name: labels of ASCII letters, digits and hyphens (no hyphen first or last), each at
  most 63 long and 253 in all, the last beginning with a letter (so no numeric spelling of an
  address passes as a name); one trailing dot is dropped, letters are lowercased. An
  internationalised name travels as its IDNA A-label (`xn--bcher-kva.example`), which must
  decode; a grant may be written in Unicode and is stored as its A-label (IDNA 2008 with
  UTS 46, the `idna` package).

Nothing else is a host: no NUL, control, whitespace, `%`, `@`, `\\`, `_` or non-ASCII byte, no
empty label, nothing after the port. Anything else is refused (`BadHost`, which the proxy
answers 400) before any rule looks at it; what a rule judges is the parsed `Host`, the same
object the proxy then resolves, connects to and logs.

**The table.** Every address is judged by Link's own copy of the IANA IPv4 and IPv6
special-purpose address registries (never by the `ipaddress` module's `is_private` or
`is_global`, whose answers change between Python releases), by longest prefix. IPv6 forms that
carry an IPv4 address are judged by that address too: an IPv4-mapped address (`::ffff:0:0/96`)
and the well-known NAT64 prefix (`64:ff9b::/96`, how an IPv6-only network reaches IPv4) are
judged by the IPv4 address alone, since that is where they go; the IPv4-compatible (`::/96`) and
IPv4-translated (`::ffff:0:0:0/96`) forms, local-use NAT64 (`64:ff9b:1::/48`), 6to4
(`2002::/16`) and Teredo (`2001::/32`) are refused whatever they carry (deprecated, or a path
through someone else's translator the proxy can't judge), naming what they carry when that is
refused too. Outside the IPv6 space given out for the internet (`2000::/3`) nothing is reached.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Literal

import idna

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_NAME = 253
MAX_LABEL = 63
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
"""Names every resolver takes for this machine; `*.localhost` too (RFC 6761)."""
LOOPBACK = "this machine (loopback): needs the localhost permission"

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
_IPV6_CHARACTERS = frozenset("0123456789abcdef:.")
_PORT = re.compile(r"[1-9][0-9]{0,4}")


class BadHost(ValueError):
    """Text that isn't a host (or host:port) in Link's grammar; the message says why."""


@dataclass(frozen=True)
class Host:
    """A host in its one canonical spelling: a name, or the address it names literally."""

    text: str
    """The name (lowercase, A-labels, no trailing dot), dotted quad, or compressed IPv6."""
    address: IP | None = None
    """The address, when the host is one; None for a name, which is resolved."""

    def __str__(self) -> str:
        return self.text

    @property
    def bracketed(self) -> str:
        """As it is written before a port or in a Host header: IPv6 in brackets."""
        return f"[{self.text}]" if isinstance(self.address, ipaddress.IPv6Address) else self.text

    def authority(self, port: int) -> str:
        return f"{self.bracketed}:{port}"

    @property
    def names_loopback(self) -> bool:
        """A loopback name or address: this machine, whatever a resolver would say."""
        if self.address is not None:
            return is_loopback(self.address)
        return self.text in LOOPBACK_NAMES or self.text.endswith(".localhost")


def _shown(text: str) -> str:
    """Text quoted for a message, escapes visible and never too long."""
    return repr(text if len(text) <= 80 else text[:80] + "…")


def _name(text: str, whole: str) -> Host:
    if text.endswith("."):
        text = text[:-1]
    odd = next((c for c in text if c not in _NAME_CHARACTERS), None)
    if odd is not None:
        raise BadHost(f"{_shown(whole)} is not a host: {odd!r} is never part of one")
    if not text:
        raise BadHost(f"{_shown(whole)} is not a host: it is empty")
    if len(text) > MAX_NAME:
        raise BadHost(f"{_shown(whole)} is not a host: a name is at most {MAX_NAME} characters")
    labels = text.split(".")
    for label in labels:
        if len(label) > MAX_LABEL:
            raise BadHost(f"{_shown(whole)} is not a host: a label is at most {MAX_LABEL} characters")
        if not _LABEL.fullmatch(label):
            raise BadHost(f"{_shown(whole)} is not a host: {label!r} is not a label (letters, digits, inner hyphens)")
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except idna.IDNAError as exc:
                raise BadHost(f"{_shown(whole)} is not a host: {label!r} is no IDNA name ({exc})") from None
    if not labels[-1][0].isalpha():
        raise BadHost(
            f"{_shown(whole)} is not a host: a name's last label begins with a letter, and an IPv4 address "
            "is written as four decimal numbers (e.g. 93.184.215.14)"
        )
    return Host(text)


def parse_host(text: str) -> Host:
    """The host a request names: a dotted quad, `[IPv6]`, or a name (see the module's grammar)."""
    if not text.isascii():
        raise BadHost(f"{_shown(text)} is not a host: a name travels in ASCII (an IDNA name as its xn-- form)")
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].lower()
        if not inner or not set(inner) <= _IPV6_CHARACTERS:
            raise BadHost(f"{_shown(text)} is not a host: brackets hold an IPv6 address alone (no zone)")
        try:
            return Host(ipaddress.IPv6Address(inner).compressed, ipaddress.IPv6Address(inner))
        except ipaddress.AddressValueError:
            raise BadHost(f"{_shown(text)} is not a host: not an IPv6 address") from None
    if _DOTTED_QUAD.fullmatch(text):
        return Host(text, ipaddress.IPv4Address(text))
    return _name(text.lower(), text)


def parse_authority(text: str) -> tuple[Host, int]:
    """`host:port` as CONNECT names it (IPv6 in brackets), port 1-65535."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise BadHost(f"{_shown(text)} is not host:port")
    if not _PORT.fullmatch(port) or int(port) > 65535:
        raise BadHost(f"{_shown(text)}: {port!r} is not a port (1-65535)")
    return parse_host(host), int(port)


def parse_http_url(target: str) -> tuple[Host, int, str]:
    """An absolute `http://host[:port]/path?query` request target: its host, port, and the rest."""
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() != "http":
        raise BadHost("a proxy request names an http:// address (https goes through CONNECT)")
    end = next((i for i, c in enumerate(rest) if c in "/?"), len(rest))
    authority, path = rest[:end], rest[end:]
    if authority.endswith("]") or ":" not in authority.rpartition("]")[2]:
        host, port = parse_host(authority), 80
    else:
        host, port = parse_authority(authority)
    if path.startswith("?") or not path:
        path = "/" + path
    return host, port, path


def parse_pattern(text: str) -> str:
    """A grant's host, as the proxy compares it: `*`, `*.name` (it and every name under it), a name
    (Unicode taken, stored as its A-label), or an address (IPv6 bracketed or not)."""
    given = text.strip()
    if given == "*":
        return given
    wildcard = given.startswith("*.")
    body = given[2:] if wildcard else given
    if not body.isascii():
        try:
            body = idna.encode(body, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise BadHost(f"{_shown(given)} is not a host: {exc}") from None
    if ":" in body and not body.startswith("["):
        body = f"[{body}]"
    host = parse_host(body)
    if wildcard and host.address is not None:
        raise BadHost(f"{_shown(given)}: only a name has names under it")
    return f"*.{host.text}" if wildcard else host.text


def normal_host(host: str) -> str:
    """A host list entry as the proxy compares it (`parse_pattern`). An entry that isn't a
    host (an adapter's slip) stays as written: no host a request names, parsed, ever equals it."""
    try:
        return parse_pattern(host)
    except BadHost:
        return host.strip()


# --- the table ----------------------------------------------------------------------------------

Carried = Literal["mapped", "nat64", "compatible", "translated", "6to4", "teredo"]


@dataclass(frozen=True)
class Special:
    """A range of the special-purpose registries: why it is never reached, or None when what it
    carries decides alone."""

    network: Network
    reason: str | None
    carries: Carried | None = None


def _v4(prefix: str, reason: str) -> Special:
    return Special(ipaddress.IPv4Network(prefix), reason)


def _v6(prefix: str, reason: str | None, carries: Carried | None = None) -> Special:
    return Special(ipaddress.IPv6Network(prefix), reason, carries)


PRIVATE = "a private network"
DOCUMENTATION = "an address kept for documentation"

TABLE: tuple[Special, ...] = (
    # IANA IPv4 Special-Purpose Address Registry (and 224.0.0.0/4, 240.0.0.0/4 of the address space).
    _v4("0.0.0.0/8", "this network (0.0.0.0/8), never a destination"),
    _v4("0.0.0.0/32", "this machine (an unspecified address)"),
    _v4("10.0.0.0/8", PRIVATE),
    _v4("100.64.0.0/10", "a carrier-grade NAT network"),
    _v4("127.0.0.0/8", LOOPBACK),
    _v4("169.254.0.0/16", "a link-local network"),
    _v4("172.16.0.0/12", PRIVATE),
    _v4("192.0.0.0/24", "an address of IETF protocols (192.0.0.0/24)"),
    _v4("192.0.2.0/24", DOCUMENTATION),
    _v4("192.88.99.0/24", "a retired 6to4 relay address (192.88.99.0/24)"),
    _v4("192.168.0.0/16", PRIVATE),
    _v4("198.18.0.0/15", "a benchmarking network"),
    _v4("198.51.100.0/24", DOCUMENTATION),
    _v4("203.0.113.0/24", DOCUMENTATION),
    _v4("224.0.0.0/4", "a multicast address"),
    _v4("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
    _v4("255.255.255.255/32", "the broadcast address"),
    # IANA IPv6 Special-Purpose Address Registry, and the forms that carry an IPv4 address.
    _v6("::/128", "this machine (an unspecified address)"),
    _v6("::1/128", LOOPBACK),
    _v6("::/96", "an IPv4-compatible address (deprecated)", "compatible"),
    _v6("::ffff:0:0/96", None, "mapped"),
    _v6("::ffff:0:0:0/96", "an IPv4-translated address (deprecated)", "translated"),
    _v6("64:ff9b::/96", None, "nat64"),
    _v6("64:ff9b:1::/48", "a local-use IPv4/IPv6 translation network (64:ff9b:1::/48)"),
    _v6("100::/64", "a discard-only address (100::/64)"),
    _v6("100:0:0:1::/64", "a dummy address (100:0:0:1::/64)"),
    _v6("2001::/23", "an address of IETF protocols (2001::/23)"),
    _v6("2001::/32", "a Teredo tunnel address", "teredo"),
    _v6("2001:2::/48", "a benchmarking network"),
    _v6("2001:10::/28", "an ORCHID identifier, never an address (deprecated)"),
    _v6("2001:20::/28", "an ORCHIDv2 identifier, never an address"),
    _v6("2001:30::/28", "a drone remote ID identifier, never an address"),
    _v6("2001:db8::/32", DOCUMENTATION),
    _v6("2002::/16", "a 6to4 address (retired)", "6to4"),
    _v6("3fff::/20", DOCUMENTATION),
    _v6("5f00::/16", "a segment routing identifier (5f00::/16)"),
    _v6("fc00::/7", PRIVATE),
    _v6("fe80::/10", "a link-local network"),
    _v6("fec0::/10", "a site-local network (deprecated)"),
    _v6("ff00::/8", "a multicast address"),
)
"""Every special-purpose range Link knows, judged by the longest prefix that holds an address."""

_BY_LENGTH = sorted(TABLE, key=lambda special: special.network.prefixlen, reverse=True)
_INTERNET_V6 = ipaddress.IPv6Network("2000::/3")
_V4_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


def special(ip: IP) -> Special | None:
    """The most specific range of the table that holds `ip`, if any."""
    plain = _unscoped(ip)
    return next((s for s in _BY_LENGTH if s.network.version == plain.version and plain in s.network), None)


def _unscoped(ip: IP) -> IP:
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        return ipaddress.IPv6Address(int(ip))
    return ip


def carried(ip: ipaddress.IPv6Address, form: Carried) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address of `form` carries (Teredo: its server and its client)."""
    value = int(ip)
    if form == "6to4":
        return [ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)]
    if form == "teredo":
        return [ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF), ipaddress.IPv4Address(~value & 0xFFFFFFFF)]
    return [ipaddress.IPv4Address(value & 0xFFFFFFFF)]


def is_loopback(ip: IP) -> bool:
    """This machine's loopback: 127.0.0.0/8, ::1, and 127.0.0.0/8 mapped into IPv6 (the kernel
    sends `::ffff:127.0.0.1` to the IPv4 loopback). No other form carrying 127.x goes there."""
    plain = _unscoped(ip)
    if isinstance(plain, ipaddress.IPv6Address):
        if plain not in _MAPPED:
            return plain == ipaddress.IPv6Address(1)
        plain = carried(plain, "mapped")[0]
    return plain in _V4_LOOPBACK


def refusal(ip: IP, *, localhost: bool = False, this_machine: frozenset[IP] = frozenset()) -> str | None:
    """Why the proxy never connects to `ip`, or None when it may; `localhost` opens the loopback."""
    ip = _unscoped(ip)
    if is_loopback(ip):
        return None if localhost else LOOPBACK
    if ip in this_machine:
        return "this machine (one of its own addresses)"
    found = special(ip)
    if found is not None and found.carries is not None and isinstance(ip, ipaddress.IPv6Address):
        # A mapped loopback address was judged above: through any other form, 127.x isn't this machine.
        for inner in carried(ip, found.carries):
            reason = refusal(inner, this_machine=this_machine)
            if reason is not None:
                return f"{reason} (as {ip.compressed})"
    if found is not None:
        return found.reason
    if isinstance(ip, ipaddress.IPv6Address) and ip not in _INTERNET_V6:
        return "an IPv6 address outside the internet's (2000::/3)"
    return None
