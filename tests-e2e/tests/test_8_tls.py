"""8. A hosted model over real TLS: `lnk agent start` then `lnk agent chat -m`, for each provider Link
names (Anthropic Messages, OpenAI chat completions, OpenRouter), answered by a stand-in at the
provider's real name, behind a certificate the proxy verified, holding the key only the proxy added.

No `LNK_UPSTREAM_<PROVIDER>` here: the proxy takes the path it takes for a real key, to port 443 of
the name. Link runs in a network namespace made for this test, where the providers' names resolve
(through a hosts file bound there alone) to a public-looking address in a second namespace, one veth
away, where the stand-in serves HTTPS with a certificate from a throwaway CA. The one setting tests
use, `LNK_UPSTREAM_CA`, tells the proxy to trust that CA in place of the usual ones.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from conftest import AGENT

from link_conformance import Reply, StandInProvider
from link_conformance.provider import Recorded
from lnk_e2e import netns
from lnk_e2e.machine import Machine
from lnk_e2e.release import Release

PROVIDERS = {
    # provider: (its host, Link's model for it, the path asked, the key's header and how it is written)
    "anthropic": ("api.anthropic.com", "claude-sonnet-5-5", "/v1/messages", "x-api-key", "{}"),
    "openai": ("api.openai.com", "gpt-6-luna", "/v1/chat/completions", "authorization", "Bearer {}"),
    "openrouter": ("openrouter.ai", "openrouter/auto", "/api/v1/chat/completions", "authorization", "Bearer {}"),
}
PROVIDERS_AT = "93.184.215.34"
"""Where the providers' names resolve inside: on the internet as far as the proxy can tell."""


@pytest.fixture(scope="module")
def network(root: Path) -> Iterator[netns.Namespaces]:
    reason = netns.why_not()
    if reason is not None:
        pytest.skip(reason)
    made = netns.Namespaces(f"lnke2e{os.getpid()}", "93.184.215.1", PROVIDERS_AT, 24, root / "tls-hosts")
    try:
        yield made.make({host: PROVIDERS_AT for host, *_ in PROVIDERS.values()})
    finally:
        made.remove()


@pytest.fixture(scope="module")
def authority(root: Path) -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def providers(
    network: netns.Namespaces, authority: trustme.CA, root: Path, model_key: str
) -> Iterator[StandInProvider]:
    """The stand-in, at port 443 of the providers' address, taking only the run's key."""
    certificate = root / "providers.pem"
    served = authority.issue_cert(*(host for host, *_ in PROVIDERS.values()))
    served.private_key_and_cert_chain_pem.write_to_path(str(certificate))
    stand_in = StandInProvider(key=model_key, certificate=certificate, sock=network.listen_outside(443)).start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def far(
    root: Path, machine: Machine, agent: str, release: Release, network: netns.Namespaces, authority: trustme.CA
) -> Iterator[Machine]:
    """A second machine on the same Link install, whose every command runs in the namespace. The
    session's agent has installed Link Harness and the sandbox from the release (nothing but the
    namespace's own network is reachable in there)."""
    assert agent == AGENT
    ca = root / "tls-ca.pem"
    authority.cert_pem.write_to_path(str(ca))
    made = Machine(root / "tls", (machine.root / "bin" / "lnk").resolve(), release, None, None)
    made.env["LNK_UPSTREAM_CA"] = str(ca)
    made.prefix = network.prefix_command()
    try:
        yield made
    finally:
        made.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_chat_is_answered_over_tls_with_the_key_the_proxy_added(
    far: Machine, providers: StandInProvider, model_key: str, provider: str
) -> None:
    host, model, path, header, written = PROVIDERS[provider]
    agent = f"tls-{provider}"

    def answer(request: Recorded) -> Reply:
        return Reply(text=f"Hello over TLS from {request.headers.get('host')}.")

    providers.script(answer)
    far.lnk("agent", "keys", "set", provider, agent, "--stdin", input=model_key)
    far.lnk("agent", "start", agent, "--model", model)
    try:
        said = far.lnk("agent", "chat", agent, "-m", "hi", timeout=120)
    finally:
        far.lnk("agent", "stop", agent, ok=False)
    assert f"Hello over TLS from {host}." in said.stdout, said

    request = providers.requests[-1]
    assert request.path == path
    assert request.headers[header] == written.format(model_key)
    log = (far.config / "agents" / agent / "proxy.log").read_text()
    assert model_key not in log
    entries = [entry for entry in map(json.loads, log.splitlines()) if entry.get("provider") == provider]
    assert entries, log
    assert all((e["host"], e["port"], e["allowed"], e["key"]) == (host, 443, True, True) for e in entries), log
