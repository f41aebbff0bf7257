"""The pairing code: one sender, once, in time, and guessing it is cut short."""

from __future__ import annotations

import re

from link_plugin.bridge.pairing import ALPHABET, SPENT_AFTER, TRIES, Attempt, PairingCode


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
