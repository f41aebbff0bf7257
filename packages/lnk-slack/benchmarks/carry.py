"""What the bridge adds to each message: python benchmarks/carry.py

Runs the real bridge (slack-sdk's Socket Mode and Web API clients, the shared bridge parts)
between the local fake Slack and a scripted harness endpoint, all on this machine, at the default
pace, and prints the median time from the owner's direct message to its answer shown whole (the
envelope acknowledged, 👀 on and off, the answer posted), against the anchor measured in the same
run: the same messages sent to the endpoint directly (`lnk_testing.overhead`).
"""

from __future__ import annotations

import os

from lnk_slack.api import ENV_API
from lnk_slack.bridge import SlackBridge

from lnk_testing.overhead import compare
from lnk_testing.slack import APP_TOKEN, BOT_TOKEN, FakeSlack, SlackUser

OWNER = SlackUser("U0OWNER", "owner")


def main() -> None:
    with FakeSlack() as slack:
        os.environ[ENV_API] = slack.api
        compare(
            "Slack",
            f"slack:{OWNER.dm}",
            lambda spec: SlackBridge(spec).run,
            {"owner": OWNER.id, "dm": OWNER.dm, "app_id": slack.app_id, "bot_user": slack.bot_user},
            {"app-token": APP_TOKEN, "bot-token": BOT_TOKEN},
            send=lambda text: slack.dm(OWNER, text),
            texts=lambda: slack.texts(OWNER.dm),
            ready=lambda: slack.wait(lambda: slack.connections == 1),
        )


if __name__ == "__main__":
    main()
