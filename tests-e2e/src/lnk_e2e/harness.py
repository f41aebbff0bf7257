"""Link Harness of one agent as the suite watches it: its process in the sandbox, under the agent's
supervisor, and whether it answers on the agent's port (the proof, which takes no key).

Found once an agent runs, it follows the harness through every restart: the supervisor stays, the
harness under it is a new process each time.
"""

from __future__ import annotations

import httpx

from link_plugin import wire
from lnk_e2e import processes
from lnk_e2e.machine import Machine


def serving(process: processes.Process) -> bool:
    """Whether `process` is the harness's endpoint: Python running the `lnk_harness` package's serve."""
    module = next((a for a in process.argv if a == "lnk_harness" or a.startswith("lnk_harness.")), None)
    return module is not None and process.argv[-1].endswith("serve")


class Harness:
    def __init__(self, machine: Machine, agent: str) -> None:
        status = machine.status(agent)
        child = next(p for p in processes.running() if p.pid == status["process"]["pid"])
        self.supervisor = child.parent
        self.proof = status["endpoint"].rsplit("/v1", 1)[0] + wire.PROOF_PATH
        self.headers = {wire.AGENT: agent, wire.AGENT_ID: status["id"]}
        self._client = httpx.Client(timeout=2, trust_env=False)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def process(self) -> processes.Process | None:
        """The harness's process, or None while the supervisor starts it again."""
        return next((p for p in processes.descendants(self.supervisor) if serving(p)), None)

    def answers(self) -> bool:
        """It answers the proof on the agent's port: it serves (a port published before the harness
        listens takes a connection and answers nothing)."""
        challenge = wire.new_challenge()
        try:
            sent = self._client.post(self.proof, json={"challenge": challenge}, headers=self.headers)
        except httpx.TransportError:
            return False
        return sent.status_code == 200 and "proof" in sent.json()

    def back(self, killed: int) -> processes.Process | None:
        """The harness started again after `killed` ended, once it answers."""
        process = self.process()
        if process is None or process.pid == killed or not self.answers():
            return None
        return process
