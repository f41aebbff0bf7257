"""The proxy's rules on their own: hosts and ports judged before a lookup, addresses after."""

from __future__ import annotations

import ipaddress

from lnk_sandbox.addresses import this_machine
from lnk_sandbox.hosts import Host, parse_host, parse_pattern
from lnk_sandbox.rules import Endpoint, Rules, matches


def before(rules: Rules, host: str, port: int) -> str | None:
    return rules.before(parse_host(host), port)


def test_this_machine_knows_its_addresses() -> None:
    assert ipaddress.ip_address("127.0.0.1") in this_machine()


def test_names_are_judged_before_they_are_resolved() -> None:
    rules = Rules(hosts=("api.openai.com", "*.github.com"), endpoints=frozenset({Endpoint(host="github.com", port=22)}))
    assert before(rules, "api.openai.com", 443) is None
    assert before(rules, "API.OpenAI.com.", 80) is None
    assert before(rules, "codeload.github.com", 443) is None
    assert before(rules, "github.com", 22) is None
    assert "isn't one of the agent's hosts" in (before(rules, "example.com", 443) or "")
    assert "isn't a named endpoint" in (before(rules, "api.openai.com", 22) or "")
    assert "isn't a named endpoint" in (before(rules, "github.com", 2222) or "")


def test_loopback_names_need_localhost_or_a_given_port() -> None:
    rules = Rules(loopback_ports=frozenset({11434}))
    assert before(rules, "localhost", 11434) is None
    assert before(rules, "127.0.0.1", 11434) is None
    assert "localhost permission" in (before(rules, "localhost", 8080) or "")
    assert "localhost permission" in (before(rules, "app.localhost", 80) or "")
    assert "localhost permission" in (before(rules, "localhost.", 80) or "")
    assert Rules(localhost=True).before(parse_host("[::1]"), 5432) is None


def test_without_network_no_outside_host_is_reached() -> None:
    assert "network permission is off" in (before(Rules(internet=False), "example.com", 443) or "")


def test_a_star_pattern_takes_the_domain_and_what_is_under_it() -> None:
    assert matches(Host("github.com"), "*.github.com") and matches(Host("a.b.github.com"), "*.github.com")
    assert not matches(Host("evilgithub.com"), "*.github.com")
    assert matches(Host("anything.example"), "*")


def test_an_address_is_never_under_a_domain() -> None:
    assert not matches(parse_host("93.184.215.14"), "*.184.215.14")
    assert matches(parse_host("93.184.215.14"), "93.184.215.14")


def test_an_ipv6_entry_matches_every_spelling_of_its_address() -> None:
    rules = Rules(hosts=(parse_pattern("2606:2800:021F::1"),))
    assert before(rules, "[2606:2800:21f:0:0:0:0:1]", 443) is None
    assert before(rules, "[2606:2800:21f::2]", 443) is not None


def test_an_internationalised_entry_matches_its_a_label_and_not_a_look_alike() -> None:
    rules = Rules(hosts=(parse_pattern("bücher.example"), parse_pattern("*.apple.example")))
    assert before(rules, "xn--bcher-kva.example", 443) is None
    assert before(rules, "www.apple.example", 443) is None
    # аpple with a Cyrillic а: a name of its own, on no list.
    assert "isn't one of the agent's hosts" in (before(rules, "www.xn--pple-43d.example", 443) or "")
