"""What the bridge adds to each message: python benchmarks/carry.py

Runs the real bridge (its engine a process of its own, here the fake engine of lnk_testing, over
the same JSON lines as the real one; the shared bridge parts) in front of a scripted harness
endpoint, all on this machine, at the default pace, and prints the median time from the owner's
message to its answer shown whole (typing, the answer sent through the engine), against the
anchor measured in the same run: the same messages sent to the endpoint directly
(`lnk_testing.overhead`).
"""

from __future__ import annotations

import os
import tempfile

from lnk_whatsapp.bridge import WhatsAppBridge
from lnk_whatsapp.process import ENV_ENGINE

from link_plugin.channel import ENV_CHANNEL_DIR
from lnk_testing.overhead import compare
from lnk_testing.whatsapp import ACCOUNT, FakeWhatsApp, chat_of

OWNER = "15550007001"


def main() -> None:
    with FakeWhatsApp() as whatsapp, tempfile.TemporaryDirectory() as folder:
        os.environ[ENV_ENGINE] = whatsapp.command
        os.environ[ENV_CHANNEL_DIR] = folder
        compare(
            "WhatsApp",
            f"whatsapp:{chat_of(OWNER)}",
            lambda spec: WhatsAppBridge(spec).run,
            {"owner": OWNER, "account": ACCOUNT},
            {},
            send=lambda text: whatsapp.dm(OWNER, text),
            texts=lambda: whatsapp.texts(chat_of(OWNER)),
            ready=lambda: whatsapp.wait(lambda: whatsapp.running),
        )


if __name__ == "__main__":
    main()
