"""What every channel's bridge does alike (`lnk_testing.scenarios`), against the fake engine. Three
of them are about answers edited while written: WhatsApp caps edits, so its answers are sent whole
instead (test_bridge.py says so of each)."""

import pytest

from lnk_testing.scenarios import BridgeScenarios

WHOLE = "WhatsApp caps edits: the answer is sent whole once written (test_bridge.py)"


class TestWhatsApp(BridgeScenarios):
    """With conftest.py's `service`, `bridge` and `control`."""

    def test_an_answer_is_edited_in_place_while_written(self) -> None:  # type: ignore[override]
        pytest.skip(WHOLE)

    def test_edits_come_about_once_a_second_by_default(self) -> None:  # type: ignore[override]
        pytest.skip(WHOLE)

    def test_flood_control_and_network_errors_leave_no_duplicate_and_no_partial_message(self) -> None:  # type: ignore[override]
        pytest.skip(WHOLE)
