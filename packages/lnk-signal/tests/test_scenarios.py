"""What every channel's bridge does alike (`lnk_testing.scenarios`), against the fake signal-cli,
where Signal differs: its answers are sent whole, never edited (Signal caps edits), so the
scenarios of edits are Signal's own here; it pairs no code and has no buttons (test_connect.py,
test_asking.py)."""

from __future__ import annotations

from conftest import SignalService

from link_plugin.bridge.carry import Pace
from lnk_testing.endpoint import Answer, ScriptedHarness
from lnk_testing.scenarios import BridgeScenarios, Start


class TestSignal(BridgeScenarios):
    """With conftest.py's `service` and `bridge`."""

    def test_an_answer_is_edited_in_place_while_written(
        self, service: SignalService, harness: ScriptedHarness, bridge: Start
    ) -> None:
        """Signal's answer is sent whole once written, typing shown meanwhile, never edited."""
        words = [f"word{i} " for i in range(20)]
        harness.script = lambda text: Answer(words, delay=0.05)
        bridge()
        owner = service.chat()
        service.send("talk")
        service.wait(lambda: service.texts(owner) == ["".join(words).strip()])
        (message,) = service.shown(owner)
        assert len(message.history) == 1, "sent once, with its whole text"
        assert service.answering(owner) >= 2, "typing showed while it was written"
        assert service.statuses("edit") == []

    def test_edits_come_about_once_a_second_by_default(
        self, service: SignalService, harness: ScriptedHarness, bridge: Start
    ) -> None:
        """At the default pace too, nothing shows until the answer is whole; typing comes every few seconds."""
        harness.script = lambda text: Answer([f"{i} " for i in range(32)], delay=0.1)
        bridge(pace=Pace(hold=10.0))
        owner = service.chat()
        service.send("count")
        service.wait(lambda: service.answering(owner) == 1)
        assert service.texts(owner) == [], "nothing while it is written"
        service.wait(lambda: service.texts(owner) == [" ".join(str(i) for i in range(32))], timeout=15)
        assert service.statuses("edit") == [] and len(service.shown(owner)[0].history) == 1

    def test_flood_control_and_network_errors_leave_no_duplicate_and_no_partial_message(
        self, service: SignalService, harness: ScriptedHarness, bridge: Start
    ) -> None:
        """Signal's rate limit (-5, its wait kept) and network errors (-3) on the sends of a long answer."""
        paragraph = "x" * (service.limit * 3 // 4)
        answer = f"start {paragraph}\n\nmiddle {paragraph}\n\nend {paragraph} done"
        pieces = [answer[i : i + 500] for i in range(0, len(answer), 500)]
        harness.script = lambda text: Answer(pieces, delay=0.05) if text == "go" else Answer(["fine"])
        service.fail("send", times=2)
        bridge()
        owner = service.chat()
        service.send("how are you")
        service.wait(lambda: service.texts(owner) == ["fine"])
        assert service.statuses("send") == [502, 502, 200], "sent once the network came back"
        service.flood("send", retry_after=1, times=2)
        service.send("go")
        expected = ["fine", f"start {paragraph}", f"middle {paragraph}", f"end {paragraph} done"]
        service.wait(lambda: service.texts(owner) == expected, timeout=40)
        assert service.statuses("send").count(200) == 4, "every message sent once"
        assert service.statuses("send").count(429) == 2
        flooded = [at for status, at in service.calls("send") if status == 429]
        assert flooded[1] - flooded[0] >= 0.95, "the wait Signal asked for was kept"
        assert all(len(message.history) == 1 for message in service.shown(owner)), "none edited, none partial"
