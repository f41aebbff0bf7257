"""Where a long answer is split at a channel's limit: between paragraphs, lines, sentences, words."""

from __future__ import annotations

from collections.abc import Callable

Measure = Callable[[str], int]
"""How a channel counts a text's length against its limit (characters, UTF-16 units, bytes)."""

_BOUNDARIES = ("\n\n", "\n", ". ", "! ", "? ", " ")


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts its 4,096."""
    return len(text.encode("utf-16-le")) // 2


def fitting(text: str, limit: int, measure: Measure = len) -> int:
    """How many leading characters of `text` fit in `limit`."""
    if measure(text) <= limit:
        return len(text)
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if measure(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def cut(text: str, limit: int, measure: Measure = len) -> int:
    """Where to end the first message of a text too long for one: at the strongest boundary in its
    second half, or where the limit falls when there is none."""
    room = fitting(text, limit, measure)
    if room >= len(text):
        return len(text)
    for boundary in _BOUNDARIES:
        at = text.rfind(boundary, room // 2, room)
        if at > 0:
            return at + len(boundary.rstrip(" "))
    return max(room, 1)


def split(text: str, limit: int, measure: Measure = len) -> list[str]:
    """A whole text as messages, each within the limit, none empty."""
    parts = []
    rest = text.strip()
    while rest:
        at = cut(rest, limit, measure)
        part = rest[:at].rstrip()
        if part:
            parts.append(part)
        rest = rest[at:].lstrip()
    return parts
