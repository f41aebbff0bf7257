"""The sockets a running harness's supervisor serves, bound and listening before their servers load.

The control socket (the run folder), and the tools socket for a sandboxed harness or else the
gateway on the block's last port (lnk.gateway serves them). They listen from the supervisor's
first moment: whatever connects while lnk still loads its servers (the tool bridge takes about
a second) waits in the socket's backlog and is answered once they run, so the harness is
marked running as soon as it answers, not once lnk's own servers have loaded.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import NamedTuple

from lnk.agents import Agent
from lnk.runstate import RunSpec

BACKLOG = 2048
"""As uvicorn listens (its default), so serving them later changes nothing."""


class Sockets(NamedTuple):
    control: socket.socket
    tools: socket.socket
    """The tools socket (a sandboxed harness), or the gateway's loopback port (one without)."""


def loopback_socket(port: int) -> socket.socket:
    # IPPROTO_TCP named, so asyncio turns Nagle off on each connection (it checks the protocol):
    # a response written in two pieces then isn't held back by the peer's delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def unix_socket(path: Path) -> socket.socket:
    """A socket only this user reaches: its folder 0700, the socket 0600."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.parent.chmod(0o700)
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    path.chmod(0o600)
    return sock


def agent_sockets(agent: Agent, spec: RunSpec) -> Sockets:
    """The agent's two sockets, listening."""
    control = unix_socket(agent.run.control)
    try:
        tools = unix_socket(agent.layout.tools_socket(spec.id)) if spec.sandboxed else loopback_socket(spec.gateway)
        for sock in (control, tools):
            sock.listen(BACKLOG)
    except OSError:
        control.close()
        raise
    return Sockets(control, tools)
