"""From `kill -9` of Link Harness mid-answer to the whole answer on the phone, in the real system.

    ./dev run bench tests-e2e crash            # or: .dev/env/bin/python tests-e2e/benchmarks/crash.py --kills 10

What runs is what the end-to-end suite runs (tests-e2e/README.md): Link built from this tree into
a release signed for the run and installed from it; `lnk agent start` with Link Harness in its
sandbox (bubblewrap) and the agent's turns as Link leaves them; the real Telegram bridge, paired
with the owner's chat on the fake Bot API; the model the conformance kit's stand-in, behind the
sandbox's proxy. Each round the owner asks, and once the answer's first words are on the phone the
harness is killed (SIGKILL); the supervisor starts it again, and the model answers the turn the
restarted harness finishes at once (a real one takes its own time again), so what is timed is
Link's. It prints, over the rounds:

- kill -> answer: from the kill to the whole answer in the chat, median and worst, against the
  goal of 5 s;
- its anchor, in the same rounds: from the kill to the restarted harness answering the proof on
  the agent's port (the supervisor starting a sandbox and the harness in it), the part no bridge
  can save;
- the baseline, once: the same kill with a lease that can only lapse (the dead holder's lock and
  ids taken out of `turn.json`, as an older harness or another machine leaves it), which is what
  every crash cost before a dead holder could be proven gone: the default lapse, 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # lnk_e2e, as the suite's pytest finds it

from lnk_e2e.conversation import Conversation
from lnk_e2e.harness import Harness
from lnk_e2e.machine import Machine
from lnk_e2e.model import Model, Pace
from lnk_e2e.pairing import pair
from lnk_e2e.phone import Phone
from lnk_e2e.release import build_release, install_lnk
from lnk_e2e.waiting import wait_for
from lnk_testing.telegram import FakeTelegram, User

AGENT = "bench"
OWNER = User(4242, "Olivia", "olivia")
GOAL = 5.0
"""Seconds from a kill to the answer on the phone the product aims at."""
AGAIN = Pace(chunks=4, delay=0.05)
"""The model's answer to the turn the restarted harness finishes: at once, so the figure is Link's
(the answer the kill cuts short streams slowly, twenty seconds, so the kill lands mid-answer)."""
UNCHECKABLE = ("machine", "boot", "lock")
"""What a lease says of its holder that lets a taker prove it gone; without it, only the lapse."""
SAID = "the harness was killed in the middle of this answer and came back to finish it"


class Rig:
    """A machine of the benchmark's own, set up as the end-to-end suite sets up its own."""

    def __init__(self, root: Path, stack: ExitStack) -> None:
        key = "sk-bench-" + secrets.token_hex(16)
        release = build_release(root / "release", root / "keys")
        self.model = Model(key).start()
        stack.callback(self.model.stop)
        self.telegram = stack.enter_context(FakeTelegram())
        lnk = install_lnk(release, root / "venv")
        self.machine = Machine(root, lnk, release, self.model.origin, self.telegram.origin)
        stack.callback(self.machine.close)
        self.machine.lnk("agent", "keys", "set", "openai", AGENT, "--stdin", input=key)
        self.machine.lnk("agent", "start", AGENT)
        stack.callback(lambda: self.machine.lnk("agent", "stop", AGENT, ok=False))
        pair(self.machine, AGENT, self.telegram, OWNER)
        self.phone = Phone(self.telegram, OWNER)
        self.conversation = Conversation(self.machine.folder(AGENT) / "chats" / f"telegram:{OWNER.id}")
        self.harness = stack.enter_context(Harness(self.machine, AGENT))
        self.model.pace = AGAIN

    def crash(self, number: int, *, lapse_only: bool = False) -> tuple[float, float]:
        """One round: seconds from the kill to the harness answering the proof, and to the answer shown."""
        harness = wait_for(self.harness.process, 120, "the harness running in its sandbox")
        shown, answers = len(self.phone.messages()), len(self.model.answers)
        self.model.slow.set()  # the answer the kill cuts short
        self.model.expect(2)  # that answer, then the turn finished after the restart
        self.phone.send(f"Crash {number}: say back, word for word, {SAID}")
        answer = self.model.answer(answers)

        def partly_shown() -> bool:
            return any(m.text and answer.startswith(m.text) and m.text != answer for m in self.phone.messages()[shown:])

        wait_for(partly_shown, 60, "the answer's first words on the phone")
        os.kill(harness.pid, signal.SIGKILL)
        killed = time.monotonic()
        if lapse_only:
            lease = self.conversation.folder / "turn.json"
            held = {k: v for k, v in json.loads(lease.read_text()).items() if k not in UNCHECKABLE}
            lease.write_text(json.dumps(held))
        wait_for(lambda: self.harness.back(harness.pid), 120, "the restarted harness answering the proof")
        restarted = time.monotonic() - killed
        wait_for(lambda: answer in [m.text for m in self.phone.messages()[shown:]], 180, "the whole answer shown")
        on_phone = time.monotonic() - killed
        wait_for(lambda: not self.conversation.outbox(), 60, "the bridge confirming the answer")
        return restarted, on_phone


def main(kills: int, baseline: bool) -> None:
    print(f"load average at the start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    root = Path(tempfile.mkdtemp(prefix="lnk-bench-", dir="/tmp"))  # short: unix sockets live under it
    try:
        with ExitStack() as stack:
            started = time.monotonic()
            rig = Rig(root, stack)
            print(
                f"set up (release built, lnk installed, agent started and paired) in {time.monotonic() - started:.0f} s"
            )
            restarts, shown = [], []
            for number in range(1, kills + 1):
                restarted, on_phone = rig.crash(number)
                restarts.append(restarted)
                shown.append(on_phone)
                print(
                    f"  kill {number}: harness back {restarted:.2f} s, answer on the phone {on_phone:.2f} s", flush=True
                )
            lapsed = rig.crash(kills + 1, lapse_only=True)[1] if baseline else None
    finally:
        shutil.rmtree(root, ignore_errors=True)
    median, worst = statistics.median(shown), max(shown)
    anchor = statistics.median(restarts)
    print(f"kill -9 mid-answer -> the whole answer on the phone: median {median:.2f} s, worst {worst:.2f} s")
    print(f"  over {kills} kills; {median / GOAL:.2f} of the {GOAL:g} s goal (median), {worst / GOAL:.2f} (worst)")
    print(
        f"anchor, kill -> the restarted harness answering the proof: median {anchor:.2f} s, worst {max(restarts):.2f} s"
    )
    print(f"  the rest (the bridge probing, recovery, the turn finished, Telegram): {median - anchor:.2f} s")
    if lapsed is not None:
        print(
            f"baseline, a lease that can only lapse (60 s): {lapsed:.2f} s; the median is {median / lapsed:.3f} of it"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--no-baseline", dest="baseline", action="store_false", help="skip the minute-long lapse")
    arguments = parser.parse_args()
    main(arguments.kills, arguments.baseline)
