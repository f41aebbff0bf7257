"""What the bridge adds to each message: python benchmarks/carry.py

Runs the real bridge (signal-cli's JSON-RPC over stdio, with the fake signal-cli standing in for
signal-cli, and the shared bridge parts) between the fake Signal and a scripted harness endpoint,
all on this machine, at the default pace, and prints the median time from the owner's message to
its answer shown whole (typing, the answer sent), against the anchor measured in the same run:
the same messages sent to the endpoint directly (`lnk_testing.overhead`).
"""

from __future__ import annotations

import os
import time

from lnk_signal.bridge import SignalBridge
from lnk_signal.program import ENV_PROGRAM

from link_plugin.bridge.recovery import QUICKLY
from lnk_testing.overhead import compare
from lnk_testing.signal_cli import ACCOUNT, FakeSignal, SignalUser

OWNER = SignalUser("+15550777001", "owner")


def ready(signal: FakeSignal) -> None:
    """signal-cli is running, and the bridge's first seconds of asking recovery often are over, so
    they weigh on neither measure."""
    signal.wait(lambda: signal.connections == 1)
    time.sleep(QUICKLY + 1)


def main() -> None:
    with FakeSignal() as signal:
        os.environ[ENV_PROGRAM] = str(signal.program)
        compare(
            "Signal",
            f"signal:{OWNER.number}",
            lambda spec: SignalBridge(spec).run,
            {"account": ACCOUNT.number, "account_uuid": ACCOUNT.uuid, "owner": OWNER.number},
            {},
            send=lambda text: signal.dm(OWNER, text),
            texts=lambda: signal.texts(OWNER.number),
            ready=lambda: ready(signal),
        )


if __name__ == "__main__":
    main()
