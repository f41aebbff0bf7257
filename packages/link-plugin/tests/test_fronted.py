"""The adapter of a harness behind the front: its answers, from a few attributes and two methods."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from link_plugin.errors import LinkError
from link_plugin.fronted import FrontedAdapter, upstream_port
from link_plugin.harness import HarnessSettings
from link_plugin.plugin import HarnessContext


class Upstream(FrontedAdapter):
    name = "upstream"
    release = "1.0"
    default_port = 8700
    install_hosts = ["registry.example"]
    state_path = "upstream"
    front_module = "upstream.front"
    upstream = "Upstream's server"
    health_path = "/healthz"

    def install_release(self, home: Path | None) -> str:
        return f"installed for {home}"

    def configure_home(self, home: Path, settings: HarnessSettings, first: int) -> str:
        return f"configured {home} on {first}"


class Healthy(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def healthy() -> Iterator[int]:
    """A harness's own server answering its health check; yields the endpoint's port (one before)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1] - 1
    finally:
        server.shutdown()
        server.server_close()


def test_the_endpoint_and_the_port_block_follow_the_port_link_gives() -> None:
    adapter = Upstream()
    given = HarnessContext(env={"LNK_PORT": "21000"})
    assert adapter.endpoint(given).url == "http://127.0.0.1:21000/v1"
    assert adapter.endpoint(HarnessContext(env={})).url == "http://127.0.0.1:8700/v1"
    assert (adapter.ports(given).count, adapter.ports(given).default) == (2, 8700)
    assert upstream_port(21000) == 21001


def test_describe_answers_what_needs_no_settings_and_names_the_rest() -> None:
    described = Upstream().describe(HarnessContext(env={}))
    assert described.channels is not None and described.channels.channels == []
    assert described.hosts is not None and described.hosts.hosts == ["registry.example"]
    assert described.state is not None and described.state.paths == ["upstream"]
    assert {"install", "configure", "start", "health"} <= set(described.answers)


def test_configure_without_settings_says_what_it_reads() -> None:
    with pytest.raises(LinkError, match="LNK_SETTINGS"):
        Upstream().configure(HarnessContext(env={}))


def test_health_asks_the_harness_s_own_server_at_the_port_after_the_endpoint(healthy: int) -> None:
    answer = Upstream().health(HarnessContext(env={"LNK_PORT": str(healthy)}))
    assert answer.ok and answer.detail == f"Upstream's server on port {healthy + 1}: 200"


def test_health_says_when_the_harness_s_server_doesn_t_answer() -> None:
    with socket.socket() as held:  # bound, never listening: a connection to it is refused
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        answer = Upstream().health(HarnessContext(env={"LNK_PORT": str(port - 1)}))
    assert not answer.ok and f"Upstream's server doesn't answer on port {port}" in answer.detail
