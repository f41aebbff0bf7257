"""Every host a request names, on both forms of request (CONNECT and an absolute http:// URI), as a
live proxy meets it: what isn't a host is answered 400 before anything judges it (never looked
up, never logged), and what is one is judged, looked up and logged in its one spelling."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import idna
import pytest
from helpers import Internet, Website, exchange
from lnk_sandbox.hosts import parse_pattern
from lnk_sandbox.proxy import ConnectionLog, Proxy, ProxySettings, Served
from lnk_sandbox.rules import Rules

PUBLIC = "93.184.215.14"
NAMES = {
    "allowed.example": PUBLIC,
    "www.allowed.example": PUBLIC,
    "xn--bcher-kva.example": PUBLIC,
    "compatible.allowed.example": "::7f00:1",
    "translated.allowed.example": "::ffff:0:7f00:1",
    "nat64.allowed.example": "64:ff9b:1::a00:1",
    "sixtofour.allowed.example": "2002:a00:1::1",
    "mapped.allowed.example": "::ffff:169.254.169.254",
}
HOMOGRAPH = idna.encode("www.аllowed.example").decode()  # a Cyrillic а


@dataclass
class Guarded:
    """A proxy whose agent may reach *.allowed.example and bücher.example, and nothing else."""

    address: str
    internet: Internet
    log_path: Path
    site: Website

    def log(self) -> list[dict[str, object]]:
        text = self.log_path.read_text() if self.log_path.exists() else ""
        return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Guarded]:
    site = Website()
    internet = Internet(NAMES, {(PUBLIC, 80): site.port, (PUBLIC, 443): site.port})
    settings = ProxySettings(
        rules=Rules(hosts=(parse_pattern("*.allowed.example"), parse_pattern("bücher.example"))),
        port=3128,
        log=ConnectionLog(tmp_path / "proxy.log"),
        network=internet,
    )
    served = Served()
    served.tcp("127.0.0.1", 0, Proxy(settings).handle)
    try:
        with served:
            yield Guarded(f"127.0.0.1:{served.ports[0]}", internet, tmp_path / "proxy.log", site)
    finally:
        site.close()


def connect(host: bytes) -> bytes:
    """CONNECT, and a request through the tunnel sent right behind it, as a client in a hurry does."""
    inside = b"GET /page HTTP/1.0\r\nHost: tunnelled\r\n\r\n"
    return b"CONNECT " + host + b":443 HTTP/1.1\r\nHost: allowed.example:443\r\n\r\n" + inside


def absolute(host: bytes) -> bytes:
    return b"GET http://" + host + b"/page HTTP/1.1\r\nHost: allowed.example\r\n\r\n"


FORMS: dict[str, Callable[[bytes], bytes]] = {"connect": connect, "absolute-uri": absolute}

NOT_HOSTS = {
    "nul": b"93.184.215.14\x00.allowed.example",
    "percent-nul": b"93.184.215.14%00.allowed.example",
    "crlf": b"93.184.215.14\r\n.allowed.example",
    "lf": b"93.184.215.14\n.allowed.example",
    "tab": b"93.184.215.14\t.allowed.example",
    "space": b"93.184.215.14 .allowed.example",
    "escape": b"www.allowed.example\x1b[2J",
    "userinfo": b"93.184.215.14@www.allowed.example",
    "userinfo-after": b"www.allowed.example@93.184.215.14",
    "backslash": b"93.184.215.14\\.allowed.example",
    "percent-encoded": b"%77ww.allowed.example",
    "percent-dot": b"www%2eallowed.example",
    "long-label": b"a" * 64 + b".allowed.example",
    "long-name": b".".join([b"a" * 63] * 4) + b".allowed.example",
    "decimal": b"2130706433",
    "hex": b"0x7f.1",
    "hex-whole": b"0x7f000001",
    "octal": b"0177.0.0.1",
    "short": b"127.1",
    "leading-zero": b"127.0.0.01",
    "ipv6-zone": b"[fe80::1%25eth0]",
    "ipv6-zone-raw": b"[::1%lo]",
    "ipv6-bare": b"::1",
    "empty-label": b"www..allowed.example",
    "underscore": b"www_x.allowed.example",
    "bad-punycode": b"xn--zz.allowed.example",
    "utf-8": "www.аllowed.example".encode(),
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("host", NOT_HOSTS.values(), ids=NOT_HOSTS.keys())
def test_what_isnt_a_host_is_answered_400_before_it_is_judged(guarded: Guarded, form: str, host: bytes) -> None:
    received = exchange(guarded.address, FORMS[form](host))
    assert received.startswith(b"HTTP/1.1 400"), received
    assert guarded.internet.looked_up == [], "a name that isn't one was looked up"
    assert guarded.log() == [], "something judged what isn't a host"
    assert guarded.site.authorizations == []


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("host", [b"WWW.Allowed.Example", b"www.allowed.example.", b"www.ALLOWED.example."])
def test_a_host_is_judged_looked_up_and_logged_in_its_one_spelling(guarded: Guarded, form: str, host: bytes) -> None:
    received = exchange(guarded.address, FORMS[form](host))
    if form == "connect":
        assert received.startswith(b"HTTP/1.1 200 Connection established"), received
        assert received.endswith(b"page for tunnelled at /page"), received
    else:
        assert received.endswith(b"page for www.allowed.example at /page"), received
    assert guarded.internet.looked_up == ["www.allowed.example"]
    [entry] = guarded.log()
    assert (entry["host"], entry["allowed"]) == ("www.allowed.example", True)


@pytest.mark.parametrize("form", FORMS)
def test_an_internationalised_name_on_the_list_is_reached_by_its_a_label(guarded: Guarded, form: str) -> None:
    received = exchange(guarded.address, FORMS[form](b"xn--bcher-kva.example"))
    assert received.startswith(b"HTTP/1.1 200" if form == "connect" else b"HTTP/1.0 200"), received
    assert guarded.internet.looked_up == ["xn--bcher-kva.example"]


@pytest.mark.parametrize("form", FORMS)
def test_a_look_alike_name_is_not_on_the_list(guarded: Guarded, form: str) -> None:
    received = exchange(guarded.address, FORMS[form](HOMOGRAPH.encode()))
    assert received.startswith(b"HTTP/1.1 403") and b"isn't one of the agent's hosts" in received, received
    assert guarded.internet.looked_up == []
    [entry] = guarded.log()
    assert (entry["host"], entry["allowed"]) == (HOMOGRAPH, False)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("compatible.allowed.example", "loopback"),
        ("translated.allowed.example", "loopback"),
        ("nat64.allowed.example", "local-use"),
        ("sixtofour.allowed.example", "private"),
        ("mapped.allowed.example", "link-local"),
    ],
)
def test_a_name_resolving_to_this_machine_in_ipv6_clothes_is_refused(
    guarded: Guarded, form: str, name: str, said: str
) -> None:
    received = exchange(guarded.address, FORMS[form](name.encode()))
    assert received.startswith(b"HTTP/1.1 403") and said.encode() in received, received
    [entry] = guarded.log()
    assert entry["host"] == name and said in str(entry["reason"])
    assert guarded.site.authorizations == []


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("host", [b"[::7f00:1]", b"[::ffff:0:7f00:1]", b"[64:ff9b:1::a00:1]", b"[::FFFF:127.0.0.1]"])
def test_an_address_off_the_list_is_refused_unlooked_up(guarded: Guarded, form: str, host: bytes) -> None:
    received = exchange(guarded.address, FORMS[form](host))
    assert received.startswith(b"HTTP/1.1 403"), received
    assert guarded.internet.looked_up == []


def test_a_request_is_routed_by_its_target_never_by_its_host_header(guarded: Guarded) -> None:
    """Without a host in the target, a request is the proxy's own: its Host header sends it nowhere.
    With one, the Host header sent on is rebuilt from the parsed host, whatever the client said."""
    own = exchange(guarded.address, b"GET /page HTTP/1.1\r\nHost: www.allowed.example\r\n\r\n")
    assert own.startswith(b"HTTP/1.1 403") and b"serves only /_link/tools/" in own, own
    assert guarded.internet.looked_up == [] and guarded.site.authorizations == []
    hostless = exchange(guarded.address, b"GET http://WWW.Allowed.Example./page HTTP/1.0\r\n\r\n")
    assert hostless.endswith(b"page for www.allowed.example at /page"), hostless
    lying = exchange(guarded.address, b"GET http://www.allowed.example/page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert lying.endswith(b"page for www.allowed.example at /page"), lying
