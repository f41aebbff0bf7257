"""Link Harness of one agent as the suite watches it: its process in the sandbox, under the agent's
supervisor, and whether it answers on the agent's port (the proof, which takes no key).

Found once an agent runs, it follows the harness through every restart: the supervisor stays, the
harness under it is a new process each time.
"""

from __future__ import annotations

import asyncio

from link_plugin.channel import EndpointRef
from link_plugin.endpoint import EndpointClient, EndpointError
from link_plugin.harness import AgentRef
from lnk_e2e import processes
from lnk_e2e.machine import Machine


def serving(process: processes.Process) -> bool:
    """Whether `process` is the harness's endpoint: Python running the `lnk_harness` package's serve
    (`python -m lnk_harness.serve`), not the sandbox's relay, whose arguments end with that command."""
    argv = process.argv
    if len(argv) < 3 or argv[1] != "-m":
        return False
    return argv[2] == "lnk_harness.serve" or (argv[2] == "lnk_harness" and argv[-1] == "serve")


class Harness:
    def __init__(self, machine: Machine, agent: str) -> None:
        status = machine.status(agent)
        child = next(p for p in processes.running() if p.pid == status["process"]["pid"])
        self.supervisor = child.parent
        # The suite never holds the endpoint key: it asks for the proof, and a proof answered at
        # all is the harness serving; whether it holds is the bridge's check, not this one's.
        endpoint = EndpointRef(url=status["endpoint"], key="")
        self._client = EndpointClient(endpoint, AgentRef(name=agent, id=status["id"], owner=status["owner"]), timeout=2)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def process(self) -> processes.Process | None:
        """The harness's process, or None while the supervisor starts it again."""
        return next((p for p in processes.descendants(self.supervisor) if serving(p)), None)

    def answers(self) -> bool:
        """It answers the proof on the agent's port: it serves (a port published before the harness
        listens takes a connection and answers nothing)."""
        try:
            proof = asyncio.run(self._client.prove())
        except EndpointError:
            return False
        return proof.status == 200 and b'"proof"' in proof.body

    def back(self, killed: int) -> processes.Process | None:
        """The harness started again after `killed` ended, once it answers."""
        process = self.process()
        if process is None or process.pid == killed or not self.answers():
            return None
        return process
