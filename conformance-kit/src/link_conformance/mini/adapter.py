"""The adapter: what Link asks lnk-mini and its shapes. Kept apart from the endpoint so its answers
start fast. It keeps conversations in memory (it is a reference, not a harness to live with)."""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from link_plugin.errors import ExitCode, NotAnswered
from link_plugin.harness import Channels, Description, Done, Endpoint, Folders, Health, Need, Needs, Ports, Risk, Start
from link_plugin.plugin import HarnessAdapter, HarnessContext, run

DEFAULT_PORT = 18790


@dataclass(frozen=True)
class Shape:
    """How one console script's mini differs from lnk-mini."""

    ports: int = 1
    need: str | None = None
    risk: str | None = None
    endpoint: bool = True
    """False: it answers no endpoint and speaks telegram itself."""
    steps: bool = True
    """False: it answers neither install nor configure."""
    describes: bool = True
    """False: an adapter from before `describe`, to which it is an unknown command."""
    counted: bool = False
    """It notes each command it is asked in $HOME/asked (its home when Link asks)."""


SHAPES = {
    "lnk-mini": Shape(),
    "lnk-broken": Shape(),
    "lnk-wide": Shape(ports=3),
    "lnk-needy": Shape(need="lan"),
    "lnk-risky": Shape(need="open", risk="open-port"),
    "lnk-silent": Shape(endpoint=False),
    "lnk-counted": Shape(counted=True),
    "lnk-plain": Shape(steps=False, counted=True),
    "lnk-older": Shape(describes=False, counted=True),
}


class Mini(HarnessAdapter):
    name = "mini"

    def __init__(self, shape: Shape) -> None:
        self.shape = shape

    def needs(self, ctx: HarnessContext) -> Needs:
        need, risk = self.shape.need, self.shape.risk
        return Needs(
            permissions=[Need(name=need, why="its tests say so")] if need else [],
            risks=[Risk(name=risk, why="its port asks for no credential")] if risk else [],
        )

    def channels(self, ctx: HarnessContext) -> Channels:
        if self.shape.endpoint:
            raise NotAnswered
        return Channels(channels=["telegram"])

    def ports(self, ctx: HarnessContext) -> Ports:
        return Ports(count=self.shape.ports, default=DEFAULT_PORT)

    def folders(self, ctx: HarnessContext) -> Folders:
        return Folders(writes=["chats"])

    def endpoint(self, ctx: HarnessContext) -> Endpoint:
        if not self.shape.endpoint:
            raise NotAnswered
        return Endpoint(url=f"http://127.0.0.1:{ctx.port or DEFAULT_PORT}/v1", proof=True, agent=True, tools=True)

    def start(self, ctx: HarnessContext) -> Start:
        return Start(argv=[sys.executable, "-m", "link_conformance.mini.server"])

    def health(self, ctx: HarnessContext) -> Health:
        try:
            socket.create_connection(("127.0.0.1", ctx.port or DEFAULT_PORT), timeout=2).close()
        except OSError as exc:
            return Health(ok=False, detail=str(exc))
        return Health(ok=True)


class WithSteps(Mini):
    """mini with an install and a configure that do nothing, so the core runs both (in the sandbox)."""

    def install(self, ctx: HarnessContext) -> Done:
        return Done(detail="mini installs nothing: it runs from its package")

    def configure(self, ctx: HarnessContext) -> Done:
        return Done(detail="mini reads its settings at each start")


class Broken(WithSteps):
    """lnk-broken: its endpoint answers the proof with the key, and `describe` lies about its ports."""

    name = "broken"

    def describe(self, ctx: HarnessContext) -> Description:
        described = super().describe(ctx)
        described.ports = Ports(count=self.shape.ports + 1, default=DEFAULT_PORT)
        return described

    def start(self, ctx: HarnessContext) -> Start:
        return super().start(ctx).model_copy(update={"env": {"LNK_MINI_BROKEN": "1"}})


def main() -> None:
    """Every shape's console script: the name it runs as picks the shape (lnk-mini's by default)."""
    called = Path(sys.argv[0]).name
    shape = SHAPES.get(called, SHAPES["lnk-mini"])
    asked = sys.argv[1] if len(sys.argv) > 1 else None
    if not shape.describes and asked == "describe":
        print("No such command 'describe'.", file=sys.stderr)
        raise SystemExit(ExitCode.USAGE)
    if shape.counted and asked:
        home = Path(os.environ["HOME"])
        home.mkdir(parents=True, exist_ok=True)
        with (home / "asked").open("a") as noted:
            noted.write(asked + "\n")
    adapter = Broken(shape) if called == "lnk-broken" else WithSteps(shape) if shape.steps else Mini(shape)
    run(adapter)
