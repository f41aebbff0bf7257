"""The proxy's rules on their own: every spelling of this machine and its networks, hosts and ports."""

from __future__ import annotations

import ipaddress

import pytest
from lnk_sandbox.addresses import refusal, this_machine
from lnk_sandbox.grants import Endpoint
from lnk_sandbox.rules import Rules, matches


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("64:ff9b::7f00:1", "loopback"),
        ("2002:7f00:1::", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("10.1.2.3", "private"),
        ("172.31.255.1", "private"),
        ("192.168.0.10", "private"),
        ("::ffff:192.168.0.10", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("224.0.0.251", "multicast"),
        ("ff02::1", "multicast"),
        ("fd12:3456::1", "private"),
        ("192.0.2.1", "private"),
        ("240.0.0.1", "private"),
    ],
)
def test_this_machine_and_its_networks_are_refused(address: str, said: str) -> None:
    reason = refusal(ipaddress.ip_address(address), localhost=False)
    assert reason is not None and said in reason


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "1.1.1.1"])
def test_the_internet_is_not_refused(address: str) -> None:
    assert refusal(ipaddress.ip_address(address), localhost=False) is None


def test_localhost_opens_the_loopback_and_nothing_else() -> None:
    assert refusal(ipaddress.ip_address("127.0.0.1"), localhost=True) is None
    assert refusal(ipaddress.ip_address("::ffff:127.0.0.1"), localhost=True) is None
    assert refusal(ipaddress.ip_address("10.0.0.1"), localhost=True) is not None


def test_this_machines_own_public_address_is_refused() -> None:
    own = ipaddress.ip_address("93.184.215.14")
    assert refusal(own, localhost=True, this_machine=frozenset({own})) == "this machine (one of its own addresses)"


def test_this_machine_knows_its_addresses() -> None:
    assert ipaddress.ip_address("127.0.0.1") in this_machine()


def test_names_are_judged_before_they_are_resolved() -> None:
    rules = Rules(hosts=("api.openai.com", "*.github.com"), endpoints=frozenset({Endpoint(host="github.com", port=22)}))
    assert rules.before("api.openai.com", 443) is None
    assert rules.before("API.OpenAI.com.", 80) is None
    assert rules.before("codeload.github.com", 443) is None
    assert rules.before("github.com", 22) is None
    assert "isn't one of the agent's hosts" in (rules.before("example.com", 443) or "")
    assert "isn't a named endpoint" in (rules.before("api.openai.com", 22) or "")
    assert "isn't a named endpoint" in (rules.before("github.com", 2222) or "")


def test_loopback_names_need_localhost_or_a_given_port() -> None:
    rules = Rules(loopback_ports=frozenset({11434}))
    assert rules.before("localhost", 11434) is None
    assert rules.before("127.0.0.1", 11434) is None
    assert "localhost permission" in (rules.before("localhost", 8080) or "")
    assert "localhost permission" in (rules.before("app.localhost", 80) or "")
    assert Rules(localhost=True).before("[::1]", 5432) is None


def test_without_network_no_outside_host_is_reached() -> None:
    assert "network permission is off" in (Rules(internet=False).before("example.com", 443) or "")


def test_a_star_pattern_takes_the_domain_and_what_is_under_it() -> None:
    assert matches("github.com", "*.github.com") and matches("a.b.github.com", "*.github.com")
    assert not matches("evilgithub.com", "*.github.com")
    assert matches("anything.example", "*")
