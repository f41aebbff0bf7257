"""Splitting a long answer at a channel's limit, on the strongest boundary near it."""

from __future__ import annotations

from link_plugin.bridge.split import cut, split, utf16_length


def test_short_text_is_one_message() -> None:
    assert split("  hello  ", 10) == ["hello"]
    assert split("   ", 10) == []


def test_paragraphs_beat_lines_beat_sentences_beat_words() -> None:
    text = "one two. three\nfour\n\nfive six seven"
    assert split(text, 22) == ["one two. three\nfour", "five six seven"]
    assert split("one two. three\nfour five", 17) == ["one two. three", "four five"]
    assert split("one two. three four", 15) == ["one two.", "three four"]
    assert split("one two three four", 10) == ["one two", "three four"]


def test_no_boundary_cuts_at_the_limit() -> None:
    assert split("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_utf16_counts_as_telegram_does() -> None:
    assert utf16_length("🚀a") == 3
    text = "🚀" * 10
    parts = split(text, 5, utf16_length)
    assert all(utf16_length(p) <= 5 for p in parts)
    assert "".join(parts) == text


def test_a_boundary_only_counts_in_the_second_half() -> None:
    text = "a " + "b" * 30
    assert cut(text, 20) == 20, "a cut at 1 would leave a near-empty message"
