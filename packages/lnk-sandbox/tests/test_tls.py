"""The real path to a hosted model: the harness speaks plain HTTP to the proxy, the proxy speaks
TLS to the provider's real name, verifies its certificate for that name, and adds the key.

The provider stands in at its real names (api.anthropic.com, api.openai.com, openrouter.ai) with
a certificate from a throwaway CA (trustme). Only the test's resolver (`Internet`) puts those
names on this machine, and only the proxy's own environment (`LNK_UPSTREAM_CA`, set outside any
sandbox) trusts that CA. Wiretaps on both of the proxy's sides keep every byte that crossed them:
the key is never among them in the clear.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
import pytest
import trustme
from helpers import Internet, Link, Wiretap
from lnk_sandbox.proxy import ConnectionLog, Proxy, ProxySettings, Served
from lnk_sandbox.rules import Rules

from link_conformance.provider import StandInProvider
from link_plugin.keys import KeyStore
from link_plugin.providers import PROVIDERS, Provider

KEY = "sk-live-" + os.urandom(12).hex()
ADDRESSES = {"api.anthropic.com": "93.184.215.31", "api.openai.com": "93.184.215.32", "openrouter.ai": "93.184.215.33"}
PYTHON = os.path.normpath(sys.executable)
VENV = os.path.normpath(sys.prefix)


@dataclass(frozen=True)
class Certificates:
    authority: Path
    """The throwaway CA the proxy is told to trust (a PEM file)."""
    providers: Path
    """Its certificate for the three providers' names, with the key: what the stand-in serves."""
    untrusted: Path
    """The same names, from a CA nobody trusts."""
    misnamed: Path
    """From the trusted CA, for a name that is no provider's."""


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    folder = tmp_path_factory.mktemp("ca")
    trusted, other = trustme.CA(), trustme.CA()
    made = Certificates(folder / "ca.pem", folder / "providers.pem", folder / "untrusted.pem", folder / "misnamed.pem")
    trusted.cert_pem.write_to_path(str(made.authority))
    trusted.issue_cert(*ADDRESSES).private_key_and_cert_chain_pem.write_to_path(str(made.providers))
    other.issue_cert(*ADDRESSES).private_key_and_cert_chain_pem.write_to_path(str(made.untrusted))
    trusted.issue_cert("api.openai.example").private_key_and_cert_chain_pem.write_to_path(str(made.misnamed))
    return made


@dataclass
class Way:
    """The whole way from a harness to a provider, wiretapped on both of the proxy's sides."""

    proxy: str
    """The proxy as the harness's client names it (through the first wiretap)."""
    harness_side: Wiretap
    provider_side: Wiretap
    provider: StandInProvider
    log: Path

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def assert_no_key_in_the_clear(self) -> None:
        for tap in (self.harness_side, self.provider_side):
            assert KEY.encode() not in tap.seen
        assert KEY not in self.log.read_text()


def internet(port: int) -> Internet:
    """The providers' names at public addresses, each served by the stand-in on this machine."""
    return Internet(ADDRESSES, {(address, 443): port for address in ADDRESSES.values()})


@contextlib.contextmanager
def way(tmp_path: Path, served_certificate: Path, trusted: Path) -> Iterator[Way]:
    keys = KeyStore(tmp_path / "keys.json")
    for name in PROVIDERS:
        keys.set(name, KEY)
    with StandInProvider(key=KEY, certificate=served_certificate) as provider:
        provider_side = Wiretap(int(urlsplit(provider.origin).port or 0))
        log = ConnectionLog(tmp_path / "proxy.log")
        settings = ProxySettings(
            rules=Rules(),
            port=3128,
            log=log,
            keys=keys,
            upstreams={"LNK_UPSTREAM_CA": str(trusted)},
            network=internet(provider_side.port),
        )
        served = Served()
        served.tcp("127.0.0.1", 0, Proxy(settings).handle)
        with served:
            harness_side = Wiretap(served.ports[0])
            try:
                proxy = f"http://127.0.0.1:{harness_side.port}"
                yield Way(proxy, harness_side, provider_side, provider, tmp_path / "proxy.log")
            finally:
                harness_side.close()
                provider_side.close()


def ask(provider: Provider, proxy: str) -> str:
    """What the harness does: the provider's own SDK, on plain http through the proxy, with no key."""
    if provider.api == "anthropic":
        messages = anthropic.Anthropic(
            base_url=f"http://{provider.host}",
            api_key="placeholder",
            http_client=anthropic.DefaultHttpxClient(proxy=proxy),
            max_retries=0,
        ).messages.create(model=provider.default_model, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        return "".join(block.text for block in messages.content if block.type == "text")
    completion = openai.OpenAI(
        base_url=provider.url, api_key="placeholder", http_client=openai.DefaultHttpxClient(proxy=proxy), max_retries=0
    ).chat.completions.create(model=provider.default_model, messages=[{"role": "user", "content": "hi"}])
    return completion.choices[0].message.content or ""


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_the_key_reaches_the_provider_over_verified_tls_and_never_in_the_clear(
    tmp_path: Path, certificates: Certificates, name: str
) -> None:
    provider = PROVIDERS[name]
    with way(tmp_path, certificates.providers, certificates.authority) as found:
        assert ask(provider, found.proxy) == "ok"
        [request] = found.provider.requests
        endpoint = "messages" if provider.api == "anthropic" else "chat/completions"
        assert request.path == f"{provider.base_path}/{endpoint}"
        assert request.headers[provider.key_header.lower()] == f"{provider.key_prefix}{KEY}"
        assert request.headers["host"] == provider.host
        # TLS from the first byte, its ClientHello naming the provider (SNI), whatever address answered.
        assert found.provider_side.upstream[:1] == b"\x16" and provider.host.encode() in found.provider_side.upstream
        assert b"placeholder" in found.harness_side.upstream, "the harness's own key never went further"
        assert b"placeholder" not in found.provider_side.seen
        found.assert_no_key_in_the_clear()
        [entry] = found.entries()
        assert entry["host"] == provider.host and entry["port"] == 443 and entry["allowed"] is True
        assert (entry["provider"], entry["key"]) == (name, True)


@pytest.mark.parametrize(
    ("certificate", "said"),
    [("untrusted", "unable to get local issuer certificate"), ("misnamed", "Hostname mismatch")],
)
def test_a_certificate_that_isnt_the_providers_is_refused_before_the_key_goes(
    tmp_path: Path, certificates: Certificates, certificate: str, said: str
) -> None:
    provider = PROVIDERS["openai"]
    with way(tmp_path, getattr(certificates, certificate), certificates.authority) as found:
        body = {"model": provider.default_model, "messages": [{"role": "user", "content": "hi"}]}
        with httpx.Client(proxy=found.proxy, timeout=20) as client:
            response = client.post(f"{provider.url}/chat/completions", json=body)
        assert response.status_code == 502
        assert f"refused api.openai.com (openai): its certificate can't be trusted ({said}" in response.text
        assert found.provider.requests == []
        found.assert_no_key_in_the_clear()
        [entry] = found.entries()
        assert entry["host"] == "api.openai.com" and entry["allowed"] is False
        assert "certificate can't be trusted" in entry["reason"] and said in entry["reason"]


def test_without_the_setting_only_the_usual_authorities_are_trusted(tmp_path: Path, certificates: Certificates) -> None:
    """A throwaway CA is trusted only where the proxy's environment names it: the usual ones don't hold it."""
    keys = KeyStore(tmp_path / "keys.json")
    keys.set("openai", KEY)
    with StandInProvider(key=KEY, certificate=certificates.providers) as provider:
        settings = ProxySettings(
            rules=Rules(),
            port=3128,
            log=ConnectionLog(tmp_path / "proxy.log"),
            keys=keys,
            network=internet(int(urlsplit(provider.origin).port or 0)),
        )
        served = Served()
        served.tcp("127.0.0.1", 0, Proxy(settings).handle)
        with served, httpx.Client(proxy=f"http://127.0.0.1:{served.ports[0]}", timeout=20) as client:
            response = client.post("http://api.openai.com/v1/chat/completions", json={"model": "gpt-6-luna"})
        assert response.status_code == 502 and "certificate can't be trusted" in response.text
        assert provider.requests == []


CURL = (
    'curl -sS -H \'Content-Type: application/json\' -d \'{"model": "gpt-6-luna", "messages": []}\' '
    "http://api.openai.com/v1/chat/completions"
)


def test_from_a_sandbox_the_answer_comes_over_tls_and_the_sandbox_cant_add_a_ca(
    link: Link, certificates: Certificates
) -> None:
    KeyStore(link.layout.agent_config("main").keys).set("openai", KEY)
    with StandInProvider(key=KEY, certificate=certificates.providers) as provider:
        tapped = Wiretap(int(urlsplit(provider.origin).port or 0))
        network = internet(tapped.port)
        trusted = link.sh(CURL, network=network, environ={"LNK_UPSTREAM_CA": str(certificates.authority)})
        # Named only inside, for the command: the proxy, outside, never reads it.
        inside = link.sh(CURL, network=network, env={"LNK_UPSTREAM_CA": str(certificates.authority)})
        tapped.close()
    assert json.loads(trusted.out)["choices"][0]["message"]["content"] == "ok", trusted
    assert "certificate can't be trusted" in inside.out, inside
    assert len(provider.requests) == 1
    assert KEY.encode() not in tapped.seen and KEY not in trusted.out + inside.out


def test_an_unreadable_ca_setting_stops_the_run_saying_so(link: Link, tmp_path: Path) -> None:
    ran = link.cli("run", "--agent", "main", "--", "true", env={"LNK_UPSTREAM_CA": str(tmp_path / "missing.pem")})
    assert ran.code == 125 and "LNK_UPSTREAM_CA names" in ran.err and "can't be read" in ran.err, ran
