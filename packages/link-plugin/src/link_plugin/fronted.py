"""The harness adapter of a harness behind `link_plugin.front`: what every such adapter answers alike.

A harness behind a front is two processes in one sandbox: the front at the endpoint's port
(`LNK_PORT`) and the harness at the port after it, both in a block of `PORT_COUNT`. Link's
bridges carry every channel, so the harness's own stay off; its tools work in the agent's files;
its state is one folder of its home; `start` runs the adapter's front module, which installs
and configures before the harness starts. What differs is said in a few class attributes and
two methods:

    class Hermes(FrontedAdapter):
        name = "hermes"
        release = __version__
        default_port = 8642
        install_hosts = ["pypi.org", "files.pythonhosted.org"]
        state_path = "hermes"
        front_module = "lnk_hermes.front"
        upstream = "Hermes's API server"

        def install_release(self, home): return release.install(home)
        def configure_home(self, home, settings, first): return config.configure(home, settings, first)

`health` asks the harness's own health check (`health_path`) on the loopback; it needs httpx
(`link-plugin[front]`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

from link_plugin.errors import LinkError
from link_plugin.harness import Channels, Done, Endpoint, Folders, HarnessSettings, Health, Hosts, Ports, Start, State
from link_plugin.plugin import HarnessAdapter, HarnessContext

PORT_COUNT = 2
"""The endpoint (the front) and, after it, the harness's own server."""


def upstream_port(first: int) -> int:
    """The harness's own server: the port after the endpoint's, in the agent's block."""
    return first + 1


def harness_home(ctx: HarnessContext) -> Path | None:
    """The harness's home the settings name; None when run by hand, without them."""
    settings = ctx.settings
    return Path(settings.folders.harness_home) if settings is not None else None


class FrontedAdapter(HarnessAdapter):
    """A harness adapter whose harness runs behind link-plugin's front (module docstring)."""

    default_port: ClassVar[int]
    """The harness's own usual port: the agent `main` keeps it for its endpoint."""
    install_hosts: ClassVar[list[str]]
    """The hosts `install` reaches (a package index, a registry); configure reaches none."""
    state_path: ClassVar[str]
    """The harness's own state (config, sessions, memory), relative to its home."""
    front_module: ClassVar[str]
    """The module `start` runs with the adapter's interpreter: the front and the harness behind it."""
    upstream: ClassVar[str]
    """What the harness's own server is called in a health answer ("Hermes's API server")."""
    health_path: ClassVar[str] = "/health"

    def install_release(self, home: Path | None) -> str:
        """Install the harness (into the shared store, and link it into `home` when given)."""
        raise NotImplementedError

    def configure_home(self, home: Path, settings: HarnessSettings, first: int) -> str:
        """Write the harness's own configuration in `home` from Link's settings."""
        raise NotImplementedError

    def channels(self, ctx: HarnessContext) -> Channels:
        return Channels(channels=[])  # its own messaging stays off: Link's bridges carry every channel

    def ports(self, ctx: HarnessContext) -> Ports:
        return Ports(count=PORT_COUNT, default=self.default_port)

    def folders(self, ctx: HarnessContext) -> Folders:
        return Folders(writes=["Home"])  # its file and shell tools work in the agent's files

    def endpoint(self, ctx: HarnessContext) -> Endpoint:
        return Endpoint(url=f"http://127.0.0.1:{ctx.port or self.default_port}/v1", proof=True, agent=True)

    def hosts(self, ctx: HarnessContext) -> Hosts:
        return Hosts(hosts=list(self.install_hosts))

    def state(self, ctx: HarnessContext) -> State:
        return State(paths=[self.state_path])

    def install(self, ctx: HarnessContext) -> Done:
        return Done(detail=self.install_release(harness_home(ctx)))

    def configure(self, ctx: HarnessContext) -> Done:
        settings = ctx.settings
        if settings is None:
            raise LinkError("configure reads the agent's settings: LNK_SETTINGS names none.")
        home = Path(settings.folders.harness_home)
        return Done(detail=self.configure_home(home, settings, ctx.port or self.default_port))

    def start(self, ctx: HarnessContext) -> Start:
        return Start(argv=[sys.executable, "-m", self.front_module])

    def health(self, ctx: HarnessContext) -> Health:
        import httpx  # only a health check needs it: every other command starts without

        port = upstream_port(ctx.port or self.default_port)
        try:
            response = httpx.get(f"http://127.0.0.1:{port}{self.health_path}", timeout=3, trust_env=False)
        except httpx.HTTPError as exc:
            return Health(ok=False, detail=f"{self.upstream} doesn't answer on port {port}: {exc}")
        status = response.status_code
        return Health(ok=status == 200, detail=f"{self.upstream} on port {port}: {status}")
