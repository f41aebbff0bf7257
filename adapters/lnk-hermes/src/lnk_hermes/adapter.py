"""The adapter: what lnk-hermes answers to every harness command of the contract.

Hermes's home is the harness's home Link gives it (`folders.harness_home`, its HOME in the
sandbox): the release it runs (`hermes-agent`, a link to the shared store's or its own), its own
state (`hermes/`: config, sessions, memory) and Link's marks.
"""

from __future__ import annotations

import sys
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.harness import Channels, Done, Endpoint, Folders, Health, Hosts, Needs, Ports, Start, State
from link_plugin.plugin import HarnessAdapter, HarnessContext
from lnk_hermes import __version__, config, release

DEFAULT_PORT = 8642
"""Hermes's own API server port: the agent `main` keeps it for its endpoint."""
PORT_COUNT = 2
"""The endpoint (the front) and, after it, Hermes's API server."""
INDEX_HOSTS = ["pypi.org", "files.pythonhosted.org"]


def _home(ctx: HarnessContext) -> Path | None:
    """The harness's home the settings name; None when run by hand, without them."""
    settings = ctx.settings
    return Path(settings.folders.harness_home) if settings is not None else None


class Hermes(HarnessAdapter):
    name = "hermes"
    release = __version__

    def needs(self, ctx: HarnessContext) -> Needs:
        # Its tools (a terminal, files) run inside the sandbox with the agent's grants; its model
        # and its MCP servers are reached through the proxy. Nothing beyond Link's defaults.
        return Needs()

    def channels(self, ctx: HarnessContext) -> Channels:
        return Channels(channels=[])  # its messaging platforms stay off: Link's bridges carry every channel

    def ports(self, ctx: HarnessContext) -> Ports:
        return Ports(count=PORT_COUNT, default=DEFAULT_PORT)

    def folders(self, ctx: HarnessContext) -> Folders:
        return Folders(writes=["Home"])  # its file and terminal tools work in the agent's files

    def endpoint(self, ctx: HarnessContext) -> Endpoint:
        return Endpoint(url=f"http://127.0.0.1:{ctx.port or DEFAULT_PORT}/v1", proof=True, agent=True)

    def hosts(self, ctx: HarnessContext) -> Hosts:
        return Hosts(hosts=INDEX_HOSTS)  # install reaches PyPI; configure reaches nothing

    def state(self, ctx: HarnessContext) -> State:
        return State(paths=[config.STATE])

    def install(self, ctx: HarnessContext) -> Done:
        return Done(detail=release.install(_home(ctx)))

    def configure(self, ctx: HarnessContext) -> Done:
        settings = ctx.settings
        if settings is None:
            raise LinkError("configure reads the agent's settings: LNK_SETTINGS names none.")
        home = Path(settings.folders.harness_home)
        return Done(detail=config.configure(home, settings, ctx.port or DEFAULT_PORT))

    def start(self, ctx: HarnessContext) -> Start:
        return Start(argv=[sys.executable, "-m", "lnk_hermes.front"])

    def health(self, ctx: HarnessContext) -> Health:
        import httpx

        port = config.api_port(ctx.port or DEFAULT_PORT)
        try:
            response = httpx.get(f"http://127.0.0.1:{port}/health", timeout=3, trust_env=False)
        except httpx.HTTPError as exc:
            return Health(ok=False, detail=f"Hermes doesn't answer on port {port}: {exc}")
        return Health(
            ok=response.status_code == 200, detail=f"Hermes's API server on port {port}: {response.status_code}"
        )
