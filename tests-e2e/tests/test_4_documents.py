"""4. A PDF the owner drops into Home/memory/ is indexed and found by search."""

from __future__ import annotations

import json
from typing import Any

from conftest import AGENT

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.pdf import write_pdf
from lnk_e2e.phone import Phone
from lnk_e2e.waiting import wait_for

SERVICE_RECORD = [
    "Boiler service record, March",
    "Engineer: R. Hale, Hale & Sons Heating",
    "The boiler's serial number is KX-4471-B.",
    "Pressure checked and topped up to 1.2 bar. Next service due in twelve months.",
]


def files(machine: Machine) -> int:
    """How many of the agent's files memory indexed: its documents, less the conversations, which the
    earlier tests' chats keep adding while this one waits."""
    found: dict[str, Any] = json.loads(machine.lnk("agent", "memory", "status", AGENT, "--json").stdout)["indexed"]
    return int(found["documents"]) - int(found["conversations"])


def test_a_pdf_dropped_into_memory_is_found_by_search(machine: Machine, owner: Phone, model: Model) -> None:
    before = files(machine)
    write_pdf(machine.folder(AGENT) / "Home" / "memory" / "boiler-service.pdf", SERVICE_RECORD)
    wait_for(lambda: files(machine) > before, 60, "memory indexing the PDF")

    said = owner.ask(model, "What is the boiler's serial number?", calls=2)

    assert said.answer == "The boiler's serial number is KX-4471-B."
    assert said.tool_call[0] == "search"
    assert said.tool_result["results"][0]["path"].endswith("boiler-service.pdf"), said.tool_result
