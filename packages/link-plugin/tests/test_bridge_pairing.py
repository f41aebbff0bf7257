"""The pairing code: one sender, once, in time, and guessing it is cut short; each sender told how it went."""

from __future__ import annotations

import asyncio
import re

import pytest
from pydantic import BaseModel

from link_plugin.bridge.pairing import (
    ALPHABET,
    LIMITED,
    PAIRED,
    SPENT_AFTER,
    TRIES,
    WRONG,
    Attempt,
    Pairing,
    PairingCode,
    expired_text,
    paired,
)
from link_plugin.errors import LinkError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_code_is_shown_in_two_groups_from_an_unambiguous_alphabet() -> None:
    shown = PairingCode().shown
    assert re.fullmatch(rf"[{ALPHABET}]{{4}}-[{ALPHABET}]{{4}}", shown)
    assert not set("01OIL") & set(shown)
    assert len({PairingCode().shown for _ in range(50)}) == 50, "random each time"


def test_the_right_code_pairs_once_however_it_is_typed() -> None:
    code = PairingCode()
    assert code.attempt("owner", f"  {code.shown.lower().replace('-', ' ')} ") is Attempt.PAIRED
    assert code.attempt("owner", code.shown) is Attempt.SPENT, "one time only"
    assert code.attempt("someone", code.shown) is Attempt.SPENT


def test_wrong_tries_are_limited_per_sender_and_come_back_after_the_window() -> None:
    clock = Clock()
    code = PairingCode(window=60, clock=clock)
    for _ in range(TRIES):
        assert code.attempt("guesser", "AAAA-AAAA") is Attempt.WRONG
    assert code.attempt("guesser", code.shown) is Attempt.LIMITED, "not compared at all"
    assert code.attempt("owner", "BBBB-BBBB") is Attempt.WRONG, "others keep their own tries"
    clock.now += 61
    assert code.attempt("guesser", code.shown) is Attempt.PAIRED


def test_the_code_expires() -> None:
    clock = Clock()
    code = PairingCode(expires=600, clock=clock)
    clock.now += 599
    assert not code.expired
    clock.now += 2
    assert code.expired and code.remaining == 0
    assert code.attempt("owner", code.shown) is Attempt.EXPIRED


def test_guessing_from_many_accounts_spends_the_code() -> None:
    code = PairingCode()
    outcomes = [code.attempt(f"account{i}", "ZZZZ-ZZZZ") for i in range(SPENT_AFTER)]
    assert outcomes[-1] is Attempt.SPENT and set(outcomes[:-1]) == {Attempt.WRONG}
    assert code.attempt("owner", code.shown) is Attempt.SPENT


def _talk(pairing: Pairing, sender: str, text: str) -> tuple[bool, list[str]]:
    told: list[str] = []

    async def reply(said: str) -> None:
        told.append(said)

    return asyncio.run(pairing.take(sender, text, reply)), told


def test_each_sender_is_told_how_their_code_went() -> None:
    clock = Clock()
    code = PairingCode(clock=clock)
    pairing = Pairing(code, "mychat")
    assert _talk(pairing, "stranger", "AAAA-AAAA") == (False, [WRONG])
    for _ in range(TRIES - 1):
        _talk(pairing, "stranger", "AAAA-AAAA")
    assert _talk(pairing, "stranger", code.shown) == (False, [LIMITED]), "limited, and not compared"
    assert _talk(pairing, "stranger", code.shown) == (False, []), "told once"
    assert _talk(pairing, "owner", code.shown) == (True, [PAIRED])


def test_a_code_that_came_too_late_is_told_so_with_the_command_for_a_new_one() -> None:
    clock = Clock()
    pairing = Pairing(PairingCode(expires=60, clock=clock), "mychat")
    clock.now += 61
    paired_now, told = _talk(pairing, "owner", pairing.code.shown)
    assert not paired_now and told == [expired_text("mychat")]
    assert "lnk agent connect mychat" in told[0]
    error = pairing.expired("@bot", 60)
    assert "expired" in error.message and error.hint and "lnk agent connect mychat" in error.hint


def test_a_spent_code_ends_connect_saying_what_to_do() -> None:
    pairing = Pairing(PairingCode(spent_after=2), "mychat")
    _talk(pairing, "a", "ZZZZ-ZZZZ")
    with pytest.raises(LinkError) as raised:
        _talk(pairing, "b", "ZZZZ-ZZZZ")
    assert "no longer pairs anyone" in raised.value.message


class Mine(BaseModel):
    owner: str


def test_a_section_with_no_owner_says_how_to_pair() -> None:
    assert paired(Mine, {"owner": "U1"}, "My Chat", "mychat").owner == "U1"
    with pytest.raises(LinkError) as raised:
        paired(Mine, {}, "My Chat", "mychat")
    assert raised.value.hint and "lnk agent connect mychat" in raised.value.hint
