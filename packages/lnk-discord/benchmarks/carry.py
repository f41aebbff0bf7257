"""What the bridge adds to each message: python benchmarks/carry.py

Runs the real bridge (discord.py's Gateway and REST clients, the shared bridge parts) between the
local fake Discord and a scripted harness endpoint, all on this machine, at the default pace, and
prints the median time from the owner's direct message to its answer shown whole (typing, the
answer sent), against the anchor measured in the same run: the same messages sent to the endpoint
directly (`lnk_testing.overhead`).
"""

from __future__ import annotations

import os

from lnk_discord.api import ENV_API
from lnk_discord.bridge import DiscordBridge

from lnk_testing.discord import TOKEN, DiscordUser, FakeDiscord
from lnk_testing.overhead import compare

OWNER = DiscordUser(777001, "owner")


def main() -> None:
    with FakeDiscord() as discord:
        os.environ[ENV_API] = discord.origin
        compare(
            "Discord",
            f"discord:{OWNER.dm}",
            lambda spec: DiscordBridge(spec).run,
            {"owner": str(OWNER.id), "dm": str(OWNER.dm), "bot_id": str(discord.bot.id)},
            {"bot-token": TOKEN},
            send=lambda text: discord.dm(OWNER, text),
            texts=lambda: discord.texts(OWNER.dm),
            ready=lambda: discord.wait(lambda: discord.connections == 1),
        )


if __name__ == "__main__":
    main()
