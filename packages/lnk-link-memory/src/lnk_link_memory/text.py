"""Words as search sees them: unicode words, with CJK text cut into overlapping pairs of characters.

SQLite's unicode61 tokenizer takes a run of Japanese or Chinese as one long token, so a word inside
it is never found. Cutting every such run into bigrams (東京タワー -> 東京 京タ タワ ワー), in the index
and in the query alike, finds any word of two characters or more wherever it stands.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import PurePosixPath

import numpy as np

from lnk_link_memory.limits import TITLE_CHARS

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\U00020000-\U0002a6df"  # extension B
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(rf"[{_CJK}]+|[^\W_]+(?:['’][^\W_]+)*")
_PLAIN_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "it's",
        "don't",
        "can't",
        "what's",
    ]
)
"""Words too common to say what a question is about: left out of a query that has others."""


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def has_cjk(text: str) -> bool:
    """Whether a text holds CJK (most texts, all ASCII, are told at once)."""
    return not text.isascii() and _CJK_RUN.search(text) is not None


def tokens(text: str) -> list[str]:
    """The words of a text, lowercased, CJK runs as bigrams."""
    lowered = text.lower().replace("’", "'")
    if not has_cjk(lowered):
        return _PLAIN_WORD.findall(lowered)  # the common case, found in one pass
    out: list[str] = []
    for match in _WORD.finditer(lowered):
        word = match.group()
        if _CJK_RUN.fullmatch(word):
            out.extend(_bigrams(word))
        else:
            out.append(word)
    return out


def for_index(text: str) -> str:
    """The text as the full-text index stores it: CJK runs spelled out as bigrams."""
    if not has_cjk(text):
        return text
    return _CJK_RUN.sub(lambda m: " " + " ".join(_bigrams(m.group())) + " ", text)


def match_query(query: str, limit: int = 64) -> str | None:
    """An FTS5 query matching any of the query's words (bm25 ranks by how many and how rare), or None.

    Words as common as "when" or "my" are left out when the query has others: in a small folder
    they are rare enough for bm25 to rank a document by them alone."""
    seen: dict[str, None] = {}
    words = [m.group().replace("’", "'") for m in _WORD.finditer(query.lower())]
    telling = [w for w in words if w not in STOPWORDS]
    for word in telling or words:
        if _CJK_RUN.fullmatch(word) and len(word) == 1:
            seen[f'"{word}"*'] = None  # one character: the start of any pair holding it
        elif _CJK_RUN.fullmatch(word):
            seen.update((f'"{pair}"', None) for pair in _bigrams(word))
        else:
            seen[f'"{word.replace(chr(34), "")}"'] = None
    terms = list(seen)[:limit]
    return " OR ".join(terms) if terms else None


SKETCH = 32
"""How many min-hashes a document's words are summed up by, to find copies without comparing every pair."""
SKETCH_VERSION = "2"
"""Which way sketches are made: an index holding another's has them made again from its bags."""
_MIX = np.uint64(0xBF58476D1CE4E5B9)
_BIN_SHIFT = np.uint64(64 - 5)  # the top 5 bits of a hash: which of the 32 bins it falls in
_EMPTY = np.iinfo(np.uint64).max
_HASHES: dict[str, int] = {}
"""Each word's hash, kept across documents: most words of a folder come again and again."""
_HASHES_KEPT = 500_000


def _word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")


def fingerprint(words: list[str]) -> tuple[bytes, bytes]:
    """A document's words as (bag, sketch): its distinct words' hashes (sorted) with their counts, and
    min-hashes of them. Documents sharing most words share most of their sketch."""
    counts = Counter(words)
    if not counts:
        return b"", sketch(b"")
    known = _HASHES
    if len(known) > _HASHES_KEPT:
        known.clear()
    for word in [word for word in counts if word not in known]:
        known[word] = _word_hash(word)
    hashes = np.fromiter((known[word] for word in counts), dtype=np.uint64, count=len(counts))
    tally = np.fromiter(counts.values(), dtype=np.uint64, count=len(counts))
    order = np.argsort(hashes)
    bag = hashes[order].tobytes() + tally[order].tobytes()
    return bag, sketch(bag)


def sketch(bag: bytes) -> bytes:
    """One-permutation min-hashes of a bag: each occurrence of a word (its 1st, 2nd, ... time, so the
    sketch follows the counts as the copy rule does) is hashed once and falls in one of 32 bins by
    its top bits; each bin keeps its smallest hash. Two documents agree on a bin about as often as
    they share words (the Jaccard of their occurrences); a bin empty in both agrees too."""
    if not bag:
        return np.full(SKETCH, _EMPTY, dtype=np.uint64).tobytes()
    hashes, tally = np.frombuffer(bag, dtype=np.uint64).reshape(2, -1)
    repeats = tally.astype(np.int64)
    starts = np.repeat(np.cumsum(tally) - tally, repeats)
    nth = np.arange(len(starts), dtype=np.uint64) - starts
    mixed = np.sort((np.repeat(hashes, repeats) ^ (nth * _MIX)) * _MIX)
    # Sorted, the hashes of each bin are a run: its first is the bin's smallest.
    bins = np.arange(SKETCH, dtype=np.uint64) << _BIN_SHIFT
    at = np.searchsorted(mixed, bins)
    first = mixed[np.minimum(at, len(mixed) - 1)]
    inside = (at < len(mixed)) & ((first >> _BIN_SHIFT) == np.arange(SKETCH, dtype=np.uint64))
    return np.where(inside, first, _EMPTY).astype(np.uint64).tobytes()


def shared_words(a: bytes, b: bytes) -> int:
    """How many words two bags hold in common, each counted as often as both hold it."""
    if not a or not b:
        return 0
    ha, ca = np.frombuffer(a, dtype=np.uint64).reshape(2, -1)
    hb, cb = np.frombuffer(b, dtype=np.uint64).reshape(2, -1)
    _, ia, ib = np.intersect1d(ha, hb, assume_unique=True, return_indices=True)
    return int(np.minimum(ca[ia], cb[ib]).sum())


def name_title(path: str) -> str:
    """A title from a file's name: lease-agreement_2024.md -> lease agreement 2024."""
    stem = PurePosixPath(path).stem
    return clip(re.sub(r"[-_.]+", " ", stem).strip() or stem)


def heading_title(text: str) -> str | None:
    """The document's own title: a heading on its first line that has text."""
    for line in text.splitlines()[:20]:
        if not line.strip():
            continue
        match = _HEADING.match(line.strip())
        return clip(match.group(1)) if match else None
    return None


def clip(title: str) -> str:
    title = " ".join(title.split())
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"
