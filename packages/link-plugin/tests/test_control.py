"""The one client of an agent's control socket: the supervisor's status and the owner's answers,
over a real unix socket."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from link_conformance.serving import Served
from link_plugin.approvals import ApprovalsClient
from link_plugin.control import ControlClient
from link_plugin.endpoint import EndpointError, EndpointUnreachable


@pytest.fixture
def folder() -> Iterator[Path]:
    """Short enough for a socket's 108-byte path."""
    found = Path(tempfile.mkdtemp(prefix="lnk-control-", dir="/tmp"))
    yield found
    shutil.rmtree(found, ignore_errors=True)


def serving(folder: Path, status: Response) -> Served:
    async def answer(request: Request) -> Response:
        return status

    return Served(Starlette(routes=[Route("/status", answer)]), path=folder / "control.sock").start()


def test_the_status_is_what_the_supervisor_says(folder: Path) -> None:
    served = serving(folder, JSONResponse({"harness": "running", "grants": ["read-home"]}))
    try:
        found = asyncio.run(ControlClient(str(folder / "control.sock")).status())
    finally:
        served.stop()
    assert found == {"harness": "running", "grants": ["read-home"]}


@pytest.mark.parametrize(
    "answer",
    [PlainTextResponse("starting"), JSONResponse(["not", "an", "object"]), JSONResponse({}, status_code=503)],
    ids=["not-json", "not-an-object", "not-ok"],
)
def test_a_status_that_doesnt_read_is_an_error_never_a_guess(folder: Path, answer: Response) -> None:
    served = serving(folder, answer)
    try:
        with pytest.raises(EndpointError):
            asyncio.run(ControlClient(str(folder / "control.sock")).status())
    finally:
        served.stop()


def test_a_missing_socket_is_unreachable(folder: Path) -> None:
    with pytest.raises(EndpointUnreachable):
        asyncio.run(ControlClient(str(folder / "none.sock")).status())


def test_bridges_keep_the_name_they_import() -> None:
    assert ApprovalsClient is ControlClient
