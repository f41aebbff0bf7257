"""The agent's control socket as far as a bridge uses it, for bridge tests: tool calls waiting for
the owner (contract-spec/channel.md, "Asking the owner").

    with ControlSocket.temporary() as control:
        question = control.call("words", "erase", {"word": "old"})
        ... run a bridge with BridgeSpec(approvals=str(control.path)) ...
        control.answered == {question.id: True}

`GET /approvals` lists what waits, `POST /approvals/<id>` with `{"allow": true|false}` answers it
(404 when it no longer waits), as Link's core serves them. A test answers a call elsewhere (the
terminal) or lets it expire; `stop` takes the socket away and `start` brings it back, empty, as a
restarted core does.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from link_conformance.serving import Served
from link_plugin.approvals import Question


class ControlSocket:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.answered: dict[str, bool] = {}
        """Answers that came through the socket and took, by question id."""
        self.refused_posts = 0
        """Answers for a question that no longer waited (404)."""
        self.polls = 0
        self._waiting: dict[str, Question] = {}
        self._decided: dict[str, threading.Event] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._served: Served | None = None

    @classmethod
    @contextmanager
    def temporary(cls) -> Iterator[ControlSocket]:
        """One serving in a folder of its own under /tmp, short enough for a socket's 108-byte path."""
        folder = Path(tempfile.mkdtemp(prefix="lnk-control-", dir="/tmp"))
        served = cls(folder / "control.sock").start()
        try:
            yield served
        finally:
            served.stop()
            shutil.rmtree(folder, ignore_errors=True)

    def start(self) -> ControlSocket:
        self._served = Served(self._app(), path=self.path).start()
        return self

    def stop(self) -> None:
        """The socket is gone, and with it every waiting call (a stopped core refuses them)."""
        if self._served is not None:
            self._served.stop()
            self._served = None
        with self._lock:
            for question in self._waiting:
                self._decided[question].set()
            self._waiting.clear()

    def call(self, tool: str, call: str, arguments: dict[str, Any] | None = None) -> Question:
        """A tool call starts waiting for the owner."""
        question = Question(id=f"q{next(self._ids):04x}", tool=tool, call=call, arguments=arguments or {})
        with self._lock:
            self._waiting[question.id] = question
            self._decided[question.id] = threading.Event()
        return question

    def decided(self, question: str) -> threading.Event:
        """Set once the call stops waiting, however that happened."""
        with self._lock:
            return self._decided[question]

    def elsewhere(self, question: str) -> None:
        """The owner answered in the terminal, or the call waited too long: it stops waiting."""
        with self._lock:
            self._waiting.pop(question)
            self._decided[question].set()

    @property
    def waiting(self) -> list[str]:
        with self._lock:
            return list(self._waiting)

    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/approvals", self._list),
                Route("/approvals/{id}", self._answer, methods=["POST"]),
            ]
        )

    async def _list(self, request: Request) -> Response:
        with self._lock:
            self.polls += 1
            return JSONResponse([q.model_dump(mode="json") for q in self._waiting.values()])

    async def _answer(self, request: Request) -> Response:
        question = request.path_params["id"]
        allow = (await request.json()).get("allow") is True
        with self._lock:
            if self._waiting.pop(question, None) is None:
                self.refused_posts += 1
                return JSONResponse({"error": "no such question is waiting"}, status_code=404)
            self.answered[question] = allow
            self._decided[question].set()
        return JSONResponse({"answered": True, "allow": allow})
