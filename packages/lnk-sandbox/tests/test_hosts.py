"""One grammar for every host asked for, and Link's own table of what is never reached: case by
case, address by address, the same on every Python."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

import pytest
from lnk_sandbox.hosts import BadHost, parse_authority, parse_host, parse_http_url, parse_pattern, refusal

# --- the table ----------------------------------------------------------------------------------

REFUSED = [
    # IPv4
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "this network"),
    ("10.1.2.3", "private"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.254", "carrier-grade NAT"),
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("169.254.169.254", "link-local"),
    ("172.16.0.1", "private"),
    ("172.31.255.1", "private"),
    ("192.0.0.8", "IETF protocols"),
    ("192.0.2.1", "documentation"),
    ("192.88.99.1", "6to4 relay"),
    ("192.168.0.10", "private"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.254", "benchmarking"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("224.0.0.251", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    # IPv6
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("::7f00:1", "loopback"),  # IPv4-compatible 127.0.0.1
    ("::808:808", "IPv4-compatible"),  # IPv4-compatible, even of a global address
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:7f00:1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:192.168.0.10", "private"),
    ("::ffff:0:7f00:1", "loopback"),  # IPv4-translated 127.0.0.1
    ("::ffff:0:808:808", "IPv4-translated"),
    ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
    ("64:ff9b:1::a00:1", "local-use"),  # local-use NAT64 (RFC 8215)
    ("64:ff9b:1::808:808", "local-use"),
    ("100::1", "discard-only"),
    ("100:0:0:1::1", "dummy"),
    ("2001:0:4136:e378:8000:63bf:a247:28f1", "Teredo"),  # Teredo between two global addresses
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo, its client 127.0.0.1
    ("2001:1::1", "IETF protocols"),
    ("2001:2::1", "benchmarking"),
    ("2001:10::1", "ORCHID"),
    ("2001:20::1", "ORCHIDv2"),
    ("2001:db8::1", "documentation"),
    ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
    ("2002:a00:1::1", "private"),  # 6to4 of 10.0.0.1
    ("2002:808:808::1", "6to4"),  # 6to4 even of a global address: retired
    ("3fff::1", "documentation"),
    ("5f00::1", "segment routing"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("fe80::1", "link-local"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("4000::1", "outside the internet's"),
]

REACHED = [
    "93.184.215.14",
    "1.1.1.1",
    "8.8.8.8",
    "192.31.196.1",  # AS112, globally reachable
    "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
    "2a00:1450:4001:81c::200e",
    "::ffff:93.184.215.14",  # mapped: where it goes is the IPv4 address
    "64:ff9b::5db8:d70e",  # NAT64 of 93.184.215.14, as an IPv6-only network reaches it
]

_TABLES = ("is_private", "is_global", "is_reserved", "is_loopback", "is_link_local", "is_multicast")
_MORE = ("is_unspecified", "is_site_local", "ipv4_mapped", "teredo", "sixtofour")


@pytest.fixture
def no_stdlib_tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ipaddress module's own verdicts, which differ between Python releases, made to fail if asked."""

    def asked(self: object) -> bool:
        raise AssertionError("the verdict asked the ipaddress module's tables")

    for cls in (ipaddress.IPv4Address, ipaddress.IPv6Address):
        for name in _TABLES + (_MORE if cls is ipaddress.IPv6Address else ("is_unspecified",)):
            monkeypatch.setattr(cls, name, property(asked))
    yield


@pytest.mark.parametrize(("address", "said"), REFUSED)
def test_every_special_address_is_refused(no_stdlib_tables: None, address: str, said: str) -> None:
    reason = refusal(ipaddress.ip_address(address))
    assert reason is not None and said in reason, reason


@pytest.mark.parametrize("address", REACHED)
def test_the_internet_is_reached(no_stdlib_tables: None, address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


def test_localhost_opens_the_loopback_and_nothing_else() -> None:
    for address in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        assert refusal(ipaddress.ip_address(address), localhost=True) is None
    for address in ("10.0.0.1", "64:ff9b::7f00:1", "::7f00:1", "2002:7f00:1::", "::ffff:0:7f00:1"):
        assert refusal(ipaddress.ip_address(address), localhost=True) is not None, address


def test_this_machines_own_address_is_refused_in_every_form() -> None:
    own = ipaddress.IPv4Address("93.184.215.14")
    mine = frozenset({own})
    assert refusal(own, this_machine=mine) == "this machine (one of its own addresses)"
    for form in ("::ffff:93.184.215.14", "64:ff9b::5db8:d70e"):
        assert "one of its own" in (refusal(ipaddress.ip_address(form), this_machine=mine) or "")


def test_a_zone_changes_nothing() -> None:
    assert "link-local" in (refusal(ipaddress.IPv6Address("fe80::1%eth0")) or "")


# --- the grammar --------------------------------------------------------------------------------

BAD_HOSTS = [
    "93.184.215.14\0.allowed.example",
    "93.184.215.14%00.allowed.example",
    "93.184.215.14\r\n.allowed.example",
    "93.184.215.14\t.allowed.example",
    "93.184.215.14 .allowed.example",
    "user@allowed.example",
    "93.184.215.14\\.allowed.example",
    "%61llowed.example",
    "allowed%2eexample",
    "a" * 64 + ".allowed.example",
    ".".join(["a" * 63] * 4) + ".example",
    "2130706433",
    "0x7f.1",
    "0x7f000001",
    "0177.0.0.1",
    "127.1",
    "127.0.0.01",
    "1.2.3.4.5",
    "[fe80::1%25eth0]",
    "[fe80::1%eth0]",
    "fe80::1",
    "[::1",
    "[not:an:address]",
    "x..allowed.example",
    ".allowed.example",
    "allowed.example..",
    "",
    "-allowed.example",
    "allowed-.example",
    "a_b.allowed.example",
    "xn--zz.allowed.example",
    "аllowed.example",  # a Cyrillic а, as UTF-8 would come
    "allowed.example#frag",
    "allowed.example/",
]


@pytest.mark.parametrize("text", BAD_HOSTS)
def test_what_isnt_a_host_is_refused(text: str) -> None:
    with pytest.raises(BadHost):
        parse_host(text)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("allowed.example", "allowed.example"),
        ("ALLOWED.Example", "allowed.example"),
        ("allowed.example.", "allowed.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("r3---sn-abc.googlevideo.example", "r3---sn-abc.googlevideo.example"),
        ("3com.example", "3com.example"),
        ("93.184.215.14", "93.184.215.14"),
        ("[2606:2800:021F:0:0:0:0:1]", "2606:2800:21f::1"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
    ],
)
def test_a_host_has_one_spelling(text: str, canonical: str) -> None:
    assert parse_host(text).text == canonical


@pytest.mark.parametrize(
    "text",
    [
        "allowed.example",
        "allowed.example:",
        "allowed.example:0",
        "allowed.example:65536",
        "allowed.example:0443",
        "allowed.example:443x",
        "allowed.example:443:1",
        "::1:443",
        "allowed.example: 443",
        "allowed.example:+443",
    ],
)
def test_connect_names_host_and_port_and_nothing_more(text: str) -> None:
    with pytest.raises(BadHost):
        parse_authority(text)


def test_connect_takes_a_bracketed_address() -> None:
    host, port = parse_authority("[::1]:8443")
    assert (host.text, host.bracketed, port) == ("::1", "[::1]", 8443)


@pytest.mark.parametrize(
    ("target", "host", "port", "rest"),
    [
        ("http://allowed.example", "allowed.example", 80, "/"),
        ("HTTP://Allowed.Example./a?b=c", "allowed.example", 80, "/a?b=c"),
        ("http://allowed.example?b", "allowed.example", 80, "/?b"),
        ("http://allowed.example:8080/x", "allowed.example", 8080, "/x"),
        ("http://[2606:2800::1]/", "2606:2800::1", 80, "/"),
        ("http://[2606:2800::1]:81/", "2606:2800::1", 81, "/"),
    ],
)
def test_an_absolute_uri_gives_its_host_port_and_the_rest(target: str, host: str, port: int, rest: str) -> None:
    parsed, found, path = parse_http_url(target)
    assert (parsed.text, found, path) == (host, port, rest)


@pytest.mark.parametrize(
    "target",
    [
        "https://allowed.example/",
        "ftp://allowed.example/",
        "http:/allowed.example/",
        "http://user:pass@allowed.example/",
        "http://evil.example\\@allowed.example/",
        "http:///path",
        "http://allowed.example:/",
        "http://allowed.example#x",
    ],
)
def test_an_absolute_uri_names_an_http_host_alone(target: str) -> None:
    with pytest.raises(BadHost):
        parse_http_url(target)


@pytest.mark.parametrize(
    ("entry", "stored"),
    [
        ("*", "*"),
        ("Example.COM.", "example.com"),
        ("*.GitHub.com", "*.github.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("*.bücher.example", "*.xn--bcher-kva.example"),
        ("2606:2800:021f::1", "2606:2800:21f::1"),
        ("[2606:2800:21f::1]", "2606:2800:21f::1"),
        ("93.184.215.14", "93.184.215.14"),
    ],
)
def test_a_grant_is_stored_as_the_proxy_compares_it(entry: str, stored: str) -> None:
    assert parse_pattern(entry) == stored


@pytest.mark.parametrize("entry", ["*.93.184.215.14", "a_b.example", "exa mple.com", "127.1", "*.", "**.example"])
def test_a_grant_that_isnt_a_host_is_refused(entry: str) -> None:
    with pytest.raises(BadHost):
        parse_pattern(entry)
