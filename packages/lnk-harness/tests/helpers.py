"""Running `lnk-harness serve` the way Link does, and talking to it the way a bridge does."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import MAIN

from link_conformance.completions import Answered
from link_conformance.completions import send as send_to
from link_conformance.provider import StandInProvider
from link_conformance.running import free_block, wait_for_port
from link_plugin import wire
from link_plugin.channel import EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.endpoint import EndpointClient
from link_plugin.harness import AgentFolders, AgentRef, HarnessSettings, ModelRef, Turns
from link_plugin.layout import AgentFolder
from lnk_harness.conversation import Conversation

FAST = Turns(renew=0.2, lapse=1.0)
"""Leases renewed and lapsing in a second, so a crash is noticed within a test's patience."""


def settings_for(
    root: Path,
    agent: AgentRef,
    model_url: str,
    *,
    provider: str = "openai",
    model_name: str = "stand-in",
    tools: dict[str, str] | None = None,
    turns: Turns = FAST,
    hops: int = 4,
    notes_max: int = 4096,
) -> HarnessSettings:
    folder = AgentFolder(root / agent.owner.replace("@", "-at-") / agent.name)
    folder.create()
    home = folder.harness_home("harness")
    home.mkdir(parents=True, exist_ok=True)
    return HarnessSettings(
        contract=CONTRACT_VERSION,
        agent=agent,
        model=ModelRef(name=model_name, provider=provider, url=model_url),  # type: ignore[arg-type]
        folders=AgentFolders(
            agent=str(folder.root), home=str(folder.home), chats=str(folder.chats), harness_home=str(home)
        ),
        endpoint_key=wire.new_endpoint_key(),
        tools=tools or {},
        turns=turns,
        hops=hops,
        notes_max=notes_max,
    )


def write_settings(settings: HarnessSettings) -> Path:
    path = Path(settings.folders.harness_home) / ".lnk-settings.json"
    path.write_text(settings.model_dump_json(indent=2))
    return path


@dataclass
class Harness:
    """One `lnk-harness serve` process, for one agent or several."""

    settings: list[HarnessSettings]
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=lambda: free_block(2))
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def main(self) -> HarnessSettings:
        return self.settings[0]

    @property
    def chats(self) -> Path:
        return Path(self.main.folders.chats)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Harness:
        files = [write_settings(s) for s in self.settings]
        argv = ["lnk-harness", "serve", *[a for f in files[1:] for a in ("--settings", str(f))]]
        env = {**os.environ, "LNK_SETTINGS": str(files[0]), "LNK_PORT": str(self.port), **self.env}
        self.log = Path(self.main.folders.harness_home) / "serve.log"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(argv, env=env, stdout=log, stderr=log)
        wait_for_port(self.port, 30, self.process)
        return self

    def kill(self) -> None:
        """kill -9: no chance to finish anything."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.process = None

    def stop(self) -> None:
        """As Link stops it: SIGTERM, and it must be gone within its graceful shutdown's seconds."""
        if self.process is None:
            return
        self.process.terminate()
        self.process.wait(timeout=15)
        self.process = None

    def restart(self) -> Harness:
        self.stop()
        return self.start()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""

    def __enter__(self) -> Harness:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- as a bridge ----------------------------------------------------------------------

    def client(self, settings: HarnessSettings | None = None) -> EndpointClient:
        settings = settings or self.main
        ref = EndpointRef(url=f"{self.origin}/v1", key=settings.endpoint_key or "", proof=True, agent=True)
        return EndpointClient(ref, settings.agent)

    def headers(self, settings: HarnessSettings | None = None, **extra: str) -> dict[str, str]:
        settings = settings or self.main
        return {
            "Authorization": f"Bearer {settings.endpoint_key}",
            wire.AGENT: settings.agent.name,
            wire.AGENT_ID: settings.agent.id,
            **extra,
        }

    def conversation(self, thread: str, settings: HarnessSettings | None = None) -> Path:
        return Path((settings or self.main).folders.chats) / thread


async def ask(
    client: EndpointClient,
    text: str,
    thread: str,
    *,
    sender: wire.Sender | None = None,
    tools: frozenset[str] | None = None,
) -> tuple[int, str]:
    """One message as a bridge sends it: the status, and the answer's whole text."""
    async with client.chat(text, wire.Thread.parse(thread), sender=sender, tools=tools) as reply:
        return reply.status, await reply.text()


def send(harness: Harness, text: str, thread: str, **kwargs: Any) -> Answered:
    """One message as an OpenAI client sends it, with Link's headers (`message_id=` its key)."""
    main = harness.main
    return send_to(f"{harness.origin}/v1", main.endpoint_key or "", main.agent, thread, text, **kwargs)


def say(harness: Harness, text: str, thread: str, **kwargs: object) -> tuple[int, str]:
    return asyncio.run(ask(harness.client(), text, thread, **kwargs))  # type: ignore[arg-type]


def crafted(
    tmp_path: Path, provider: StandInProvider, thread: str, turns: Turns = FAST
) -> tuple[Harness, Conversation]:
    """A harness not yet started, and a conversation of its to leave as a dead one would."""
    settings = settings_for(tmp_path, MAIN, provider.url, turns=turns)
    conversation = Conversation(Path(settings.folders.chats), wire.Thread.parse(thread), settings.turns)
    return Harness([settings]), conversation


def events(folder: Path) -> list[dict[str, object]]:
    """A conversation's events as written, in order."""
    names = sorted(p for p in (folder / "events").glob("*.json"))
    return [json.loads(p.read_text()) for p in names]


def kinds(folder: Path) -> list[str]:
    return [str(e["kind"]) for e in events(folder)]


def transcript(folder: Path, *needles: str) -> str:
    """conversation.md once it says all of `needles` (it is rendered as the turn lets go)."""
    path = folder / "conversation.md"
    wait_until(lambda: path.exists() and all(n in path.read_text() for n in needles), what=f"{needles} in {path}")
    return path.read_text()


def wait_until(condition: Callable[[], object], timeout: float = 45.0, what: str = "the condition") -> None:
    """Until the condition holds. The timeout only bounds how long a failure takes to be told, and
    is wide: on two cores shared with other suites, a start takes several times its idle time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.02)
