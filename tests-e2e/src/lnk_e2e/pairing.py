"""`lnk agent connect telegram`, as the owner does it: the bot's token on stdin, the pairing code
read from the terminal and sent to the bot from the owner's phone."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lnk_e2e.machine import Machine
from lnk_testing.telegram import TOKEN, FakeTelegram, User

CODE = re.compile(r"private chat on Telegram: ([A-Z0-9]{4}-[A-Z0-9]{4})")


@dataclass(frozen=True)
class Pairing:
    said: str
    """What `lnk agent connect telegram` told the terminal."""
    code: str


def pair(machine: Machine, agent: str, telegram: FakeTelegram, owner: User) -> Pairing:
    """Connect the agent to the fake Telegram's bot, paired with `owner`'s private chat."""
    connecting = machine.spawn("agent", "connect", "telegram", agent, "--token-stdin")
    assert connecting.stdin is not None and connecting.stdout is not None
    connecting.stdin.write(TOKEN + "\n")
    connecting.stdin.close()
    said: list[str] = []
    for line in connecting.stdout:
        said.append(line)
        if found := CODE.search(line):
            code = found.group(1)
            break
    else:
        connecting.wait(timeout=60)
        raise AssertionError("lnk agent connect telegram showed no pairing code:\n" + "".join(said))
    telegram.private(owner, code)
    said += connecting.stdout
    assert connecting.wait(timeout=300) == 0, f"connect failed ({connecting.returncode}):\n{''.join(said)}"
    return Pairing("".join(said), code)
