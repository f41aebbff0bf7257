"""How a question reads in a chat, and how the owner's reply reads as an answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from link_plugin.approvals import ApprovalsClient, Question, reads_as
from link_plugin.endpoint import EndpointUnreachable


def test_a_reply_reads_as_yes_no_or_neither() -> None:
    assert reads_as("Yes") is True and reads_as(" y ") is True and reads_as("ok!") is True
    assert reads_as("no.") is False and reads_as("deny") is False
    assert reads_as("what does it do?") is None and reads_as("") is None


def test_a_question_names_the_tool_the_call_and_its_arguments() -> None:
    question = Question(id="ab12", tool="words", call="erase", arguments={"word": "x" * 600})
    said = question.wording()
    assert said.startswith('words wants to run erase with {"word": "xxx')
    assert said.endswith("Allow it? (yes or no)") and len(said) < 600


def test_a_missing_control_socket_is_unreachable(tmp_path: Path) -> None:
    with pytest.raises(EndpointUnreachable):
        asyncio.run(ApprovalsClient(str(tmp_path / "none.sock")).waiting())
