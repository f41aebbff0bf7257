"""The proxy's rules: which host and port a sandboxed program may reach, before and after resolution.

A host is judged as `hosts.parse_host` parsed it, before it is resolved (so a refused name is
never even looked up), and every address it resolves to is judged again, by `hosts.refusal`,
before the proxy connects to one of them.

Rules are made by every run that has a proxy, and judged with only once the proxy has a
connection: `hosts` (the grammar, Link's table of addresses) is loaded by what judges.
"""

from __future__ import annotations

from link_plugin.records import NamedTuple
from link_plugin.sandbox_terms import ANY_HOST

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    from lnk_sandbox.hosts import IP, Host

WEB_PORTS = frozenset({80, 443})


class Endpoint(NamedTuple):
    """A named tcp endpoint, host:port: a raw protocol reaches only what is named."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        from lnk_sandbox.hosts import BadHost, parse_pattern

        given, sep, port = text.strip().rpartition(":")
        try:
            host = parse_pattern(given) if sep else ""
        except BadHost:
            host = ""
        if not host or not port.isdigit() or host.startswith("*"):
            raise ValueError(f"{text!r} is not an endpoint: write it host:port, e.g. github.com:22")
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"{text!r}: a port is between 1 and 65535")
        return cls(host=host, port=int(port))

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def matches(host: Host, pattern: str) -> bool:
    """A host list entry: `*` (any), `*.example.com` (it and every name under it), or one host.

    `host` is parsed, so its labels are whole and its spelling canonical: a suffix that begins
    with a dot is a domain and what is under it, never part of a label."""
    if pattern == ANY_HOST:
        return True
    if pattern.startswith("*.") and host.address is None:
        base = pattern[2:]
        return host.text == base or host.text.endswith(f".{base}")
    return host.text == pattern


class Rules(NamedTuple):
    internet: bool = True
    """The network permission: hosts outside this machine, through the proxy."""
    localhost: bool = False
    """The localhost permission: every loopback port of this machine."""
    hosts: tuple[str, ...] | None = None
    """The host list, as `hosts.parse_pattern` writes each entry; None: any host."""
    endpoints: frozenset[Endpoint] = frozenset()
    """Named tcp endpoints: a raw protocol reaches only these, a name only its port."""
    loopback_ports: frozenset[int] = frozenset()
    """Loopback ports reachable without localhost (a local model server's)."""
    this_machine: frozenset[IP] = frozenset()
    """This machine's own addresses, as its kernel lists them when the proxy starts (`addresses.py`)."""
    setup: bool = False
    """The host list is the adapter's, for a setup step, not the agent's."""

    def before(self, host: Host, port: int) -> str | None:
        """Why (host, port) is refused before any lookup, or None to go on and resolve it."""
        if host.names_loopback:
            if self.localhost or port in self.loopback_ports:
                return None
            return "this machine (loopback): needs the localhost permission"
        if not self.internet:
            return "the network permission is off for this agent"
        if self.hosts is not None and not any(matches(host, pattern) for pattern in self.hosts):
            if self.setup:
                return f"{host} isn't one of the hosts the harness's adapter names for its setup"
            return f"{host} isn't one of the agent's hosts (lnk agent allow host {host})"
        if port not in WEB_PORTS and Endpoint(host=host.text, port=port) not in self.endpoints:
            return f"port {port} of {host} isn't a named endpoint (lnk agent allow tcp {host.authority(port)})"
        return None

    def after(self, address: IP, port: int) -> str | None:
        """Why the proxy won't connect to a resolved address, or None when it may."""
        from lnk_sandbox.hosts import is_loopback, refusal

        if is_loopback(address) and port in self.loopback_ports:
            return None
        return refusal(address, localhost=self.localhost, this_machine=self.this_machine)
