"""A channel's tokens, asked for in `connect`: typed in the owner's terminal (never echoed), or read
from stdin with `--token-stdin`, one a line.

Each token is checked against its shape before anything reaches the service, so a token pasted
into the wrong prompt, or half a token, is refused saying what it should look like. Tokens read
from stdin are told apart by their shape, so their order doesn't matter (Slack's `xapp-` and
`xoxb-`).

    tokens = read_tokens([Token("bot-token", "Bot token (from @BotFather)", TELEGRAM, wrong)], stdin)
"""

from __future__ import annotations

import getpass
import re
import sys
from dataclasses import dataclass

from link_plugin.errors import LinkError


@dataclass(frozen=True)
class Token:
    name: str
    """Its key name in Link's keys, as `describe` names it (bot-token)."""
    prompt: str
    """What the terminal asks."""
    shape: re.Pattern[str]
    wrong: LinkError
    """Said when what was given doesn't have the shape: what a token looks like, where to copy it."""


def read_tokens(asked: list[Token], token_stdin: bool) -> dict[str, str]:
    """Each token asked for, by name, or a LinkError naming the one that isn't right."""
    if token_stdin:
        lines = [sys.stdin.readline().strip() for _ in asked]
        found = {}
        for token in asked:
            match = next((line for line in lines if token.shape.fullmatch(line)), None)
            if match is None:
                raise token.wrong
            found[token.name] = match
        return found
    if not sys.stdin.isatty():
        names = " and ".join(token.prompt.split(" (")[0].lower() for token in asked)
        raise LinkError(
            f"there is no terminal to ask for the {names}",
            "Pass it on stdin, one a line, with --token-stdin.",
        )
    typed = {}
    for token in asked:
        value = getpass.getpass(f"{token.prompt}: ", stream=sys.stderr).strip()
        if not token.shape.fullmatch(value):
            raise token.wrong
        typed[token.name] = value
    return typed
