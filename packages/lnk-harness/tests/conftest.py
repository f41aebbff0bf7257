"""Puts this environment's executables (lnk-harness) on PATH, and gives tests a model and tools."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_tools import ToolServers

from link_conformance.provider import StandInProvider
from link_plugin.harness import AgentRef

os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

MAIN = AgentRef(name="main", id="mainagent001", owner="ana@laptop")


@pytest.fixture(scope="module")
def provider() -> Iterator[StandInProvider]:
    with StandInProvider() as provider:
        yield provider


@pytest.fixture(scope="module")
def servers() -> Iterator[ToolServers]:
    with ToolServers() as servers:
        yield servers
