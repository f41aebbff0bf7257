"""Whether a harness that just started is up, asked every 50 ms until it is or START_TIMEOUT passes.

A harness with an endpoint is up once it answers there and proves it is the agent's own: it
answers the endpoint proof with the key lnk wrote into its settings (or, for an endpoint without
the proof, answers HTTP at all). A port published before the harness listens takes a connection
and answers nothing, so a connection alone never counts. A harness without an endpoint (its
adapter speaks to the channels itself) is up once its adapter's `health` says so, asked at most
once a second, in the sandbox when the harness runs in one; an adapter that doesn't know says
nothing, and then the harness's first port taking a connection is enough.
"""

from __future__ import annotations

import asyncio
import time
from asyncio.subprocess import Process
from pathlib import Path

from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.endpoint import EndpointClient
from link_plugin.errors import LinkError
from link_plugin.harness import AgentRef, Health
from link_plugin.sandbox import SandboxRequest
from link_plugin.waits import within
from lnk.agents import Agent
from lnk.harnesses import clean_env
from lnk.keeper import START_TIMEOUT, pause
from lnk.runstate import RunSpec
from lnk.sandboxing import answer_in_sandbox, program_reads


class HarnessReadiness:
    def __init__(self, agent: Agent, spec: RunSpec, stopping: asyncio.Event) -> None:
        self.agent = agent
        self.spec = spec
        self.stopping = stopping

    async def harness_ready(self, process: Process) -> bool:
        deadline = time.monotonic() + START_TIMEOUT
        next_health = 0.0
        endpoint = self.spec.endpoint
        # The endpoint's own client proves it is ours (link_plugin's one check of the proof).
        agent = AgentRef(name=self.agent.name, id=self.agent.id, owner=self.agent.settings.owner)
        client = EndpointClient(endpoint, agent, timeout=2.0) if endpoint is not None else None
        while process.returncode is None and time.monotonic() < deadline and not self.stopping.is_set():
            if client is not None:
                if await client.ready():
                    return True
            elif time.monotonic() >= next_health:
                next_health = time.monotonic() + 1.0
                if await self._adapter_healthy():
                    return True
            await pause(self.stopping, 0.05)
        return False

    async def _connects(self, url: str) -> bool:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        try:
            _, writer = await within(asyncio.open_connection(parts.hostname, parts.port), 1.0)
        except (OSError, TimeoutError):
            return False
        writer.close()
        return True

    def _health(self) -> Health:
        """The adapter's `health`: in the sandbox (no network, only the agent's ports) when the harness is."""
        spec = self.spec
        if spec.sandboxed:
            request = SandboxRequest(
                agent=self.agent.name,
                mode="health",
                harness=spec.harness,
                argv=[spec.adapter, "health"],
                env=spec.env,
                cwd=spec.harness_home,
                reads=program_reads([spec.adapter]),
                ports=spec.ports[:-1],
            )
            answered = answer_in_sandbox(self.agent, request, Health, "health")
            return answered or Health(ok=None)
        program = PluginProgram(spec.adapter, env=clean_env(Path(spec.harness_home)), timeout=10.0)
        return program.ask_as(Health, Kind.HARNESS, "health", (), env=spec.env)

    async def _adapter_healthy(self) -> bool:
        spec = self.spec
        try:
            health = await asyncio.to_thread(self._health)
        except LinkError:
            return False
        if health.ok is None:
            return await self._connects(f"http://127.0.0.1:{spec.ports[0]}")
        return health.ok
