"""Every body is read with a cap: one far over it, sent without a length, is refused before the
harness holds more than the cap of it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from conftest import MAIN
from helpers import Harness, settings_for

from link_conformance.provider import StandInProvider
from link_plugin import wire
from lnk_testing.bodies import Growth, MiB, flood

ROUTES = [
    pytest.param("/v1/chat/completions", True, id="message"),
    pytest.param(wire.PROOF_PATH, False, id="proof"),
    pytest.param(wire.RECOVER_PATH, True, id="recover-confirm"),
]


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, provider: StandInProvider) -> Iterator[Harness]:
    with Harness([settings_for(tmp_path_factory.mktemp("caps"), MAIN, provider.url)]) as harness:
        yield harness


@pytest.mark.parametrize(("path", "keyed"), ROUTES)
def test_a_body_far_over_the_cap_is_refused_while_read(harness: Harness, path: str, keyed: bool) -> None:
    headers = harness.headers(**{wire.THREAD: "kit:caps"}) if keyed else {wire.AGENT: MAIN.name, wire.AGENT_ID: MAIN.id}
    assert harness.process is not None
    with httpx.Client(base_url=harness.origin, timeout=60) as client, Growth(harness.process.pid) as growth:
        response = flood(client, path, size=200 * MiB, headers=headers)
    assert response.status_code == 413, response.text
    assert "nothing of it was kept" in response.json()["error"]["message"]
    assert growth.grew < 6 * MiB, f"the harness grew {growth.grew / MiB:.1f} MiB reading a body it refused"
    assert not harness.conversation("kit:caps").exists(), "nothing was kept"


def test_a_body_that_says_it_is_too_large_is_refused_unread(harness: Harness) -> None:
    headers = harness.headers(**{wire.THREAD: "kit:caps", "content-type": "application/json"})
    response = httpx.post(f"{harness.origin}/v1/chat/completions", headers=headers, content=b" " * (2 * MiB))
    assert response.status_code == 413 and "1 MiB" in response.json()["error"]["message"]
    assert httpx.get(f"{harness.origin}/_link/health", headers=harness.headers()).status_code == 200
