"""Words as search sees them: unicode words, with CJK text cut into overlapping pairs of characters.

SQLite's unicode61 tokenizer takes a run of Japanese or Chinese as one long token, so a word inside
it is never found. Cutting every such run into bigrams (東京タワー -> 東京 京タ タワ ワー), in the index
and in the query alike, finds any word of two characters or more wherever it stands.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
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
_FROM_CJK = re.compile("[^\x00-\u303f\U0002a6e0-\U0010ffff]")
"""Every CJK character above lies in U+3040 to U+2A6DF: a text with none in it is told at once. Said as
what lies outside it, the same set compiles in a tenth of the time (about 8 ms, at every start)."""
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
    return not text.isascii() and _FROM_CJK.search(text) is not None and _CJK_RUN.search(text) is not None


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
BAG_VERSION = "2"
"""Which way words are hashed into bags: an index holding another's has them made again."""
_MIX = np.uint64(0xBF58476D1CE4E5B9)
_BIN_SHIFT = np.uint64(64 - 5)  # the top 5 bits of a hash: which of the 32 bins it falls in
_EMPTY = np.iinfo(np.uint64).max

_WORD_BYTES = np.zeros(256, dtype=bool)
_WORD_BYTES[list(b"abcdefghijklmnopqrstuvwxyz0123456789")] = True
_WORD_BYTES[0x80:] = True  # what is left of other scripts once _NOT_WORD is gone: letters and digits
_NOT_WORD = re.compile(r"[^\x00-\x7f\w]")
"""Characters outside ASCII that part words (dashes, quotes, bullets, symbols)."""
_APOSTROPHE = ord("'")
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M3 = np.uint64(0x94D049BB133111EB)
_HALF = np.uint64(32)
_EIGHT = np.uint64(8)


@dataclass(frozen=True)
class Fingerprint:
    """A document's words summed up, to tell copies: how many, their order's hash, their bag and sketch."""

    words: int
    words_hash: str
    bag: bytes
    """Its distinct words' hashes (sorted) with how often each comes."""
    sketch: bytes


def _mixed(x: np.ndarray) -> np.ndarray:
    """splitmix64's finish: every bit of the result depends on every bit of x."""
    x = (x ^ (x >> np.uint64(30))) * _MIX
    x = (x ^ (x >> np.uint64(27))) * _M3
    mixed: np.ndarray = x ^ (x >> np.uint64(31))
    return mixed


def word_hashes(body: str) -> np.ndarray:
    """A 64-bit hash of each of the text's words (as `tokens` finds them), in order.

    Worked on the text's UTF-8 bytes by numpy: a word is a run of letters and digits (bytes above
    ASCII are left only where they spell one), with an apostrophe inside it kept. Each word is
    hashed from its first, middle and last eight bytes and its length, so any word of up to 24
    bytes hashes from all of them."""
    return _hashed(_word_bytes(body))[0]


def _word_bytes(body: str) -> bytes:
    """A text's bytes as its words are hashed from: lowercased, with only letters and digits outside ASCII."""
    lowered = body.lower().replace("’", "'")
    if has_cjk(lowered):
        lowered = " ".join(tokens(lowered))  # CJK runs as bigrams, each a word
    elif not lowered.isascii():
        lowered = _NOT_WORD.sub(" ", lowered)
    return lowered.encode()


def _hashed(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Each word's hash (see word_hashes) and the offset in `data` it starts at."""
    n = len(data)
    padded = np.zeros(n + 16, dtype=np.uint8)  # eight bytes either side: every window stays inside
    b = padded[8 : 8 + n]
    b[:] = np.frombuffer(data, dtype=np.uint8)
    word = _WORD_BYTES[b]
    if n > 2:
        word[1:-1] |= (b[1:-1] == _APOSTROPHE) & word[:-2] & word[2:]
    edges = np.flatnonzero(np.diff(word, prepend=False, append=False))
    starts, ends = edges[0::2] + 8, edges[1::2] + 8  # offsets in `padded`
    lengths = (ends - starts).astype(np.uint64)
    # The eight bytes from each offset, read as one number (unaligned reads: numpy allows them).
    windows = np.ndarray(shape=(n + 9,), dtype="<u8", buffer=padded, strides=(1,))
    short = lengths < _EIGHT
    unused = np.where(short, (_EIGHT - lengths) * _EIGHT, np.uint64(0))
    head = (windows[starts] << unused) >> unused  # a short word's bytes alone
    tail = np.where(short, np.uint64(0), windows[ends - 8])
    middle = np.where(lengths > 16, windows[starts + (ends - starts - 8) // 2], np.uint64(0))
    # The middle window turned half round: where it overlaps the last, a byte lies elsewhere in each.
    hashes = _mixed(_mixed(head ^ lengths * _GOLDEN) ^ tail ^ (middle << _HALF | middle >> _HALF))
    return hashes, edges[0::2]


def fingerprint(body: str) -> Fingerprint:
    """A document's words summed up: two documents of the same words share most of their sketch."""
    return fingerprints([body])[0]


def fingerprints(bodies: Sequence[str]) -> list[Fingerprint]:
    """Each document's fingerprint, the documents' words hashed, counted and sketched together.

    A few dozen numpy steps make a fingerprint, each costing a few microseconds however little it
    works on: done for many documents at once (their bytes one after another, a space between),
    they cost that once, where a document at a time they cost more than the work itself."""
    if not bodies:
        return []
    data = [_word_bytes(body) for body in bodies]
    hashes, starts = _hashed(b" ".join(data))
    # Where each document's words begin and end among all the words, and whose each word is.
    bounds = np.searchsorted(starts, np.cumsum([0] + [len(d) + 1 for d in data]))
    owner = np.searchsorted(bounds, np.arange(len(hashes)), side="right") - 1
    ordered = np.empty_like(hashes)
    for first, last in itertools.pairwise(bounds.tolist()):
        ordered[first:last] = np.sort(hashes[first:last])
    # Runs of one word within a document: its distinct words, and how often each comes.
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]) | (owner[1:] != owner[:-1])
    runs = np.flatnonzero(new)
    counts = np.diff(runs, append=len(ordered)).astype(np.uint64)
    # Each occurrence of a word (its nth time) mixed once; each document's bins keep their smallest.
    nth = np.arange(len(ordered), dtype=np.uint64) - np.repeat(runs, counts.astype(np.int64)).astype(np.uint64)
    mixed = (ordered ^ (nth * _MIX)) * _MIX
    sketches = np.full((len(data), SKETCH), _EMPTY, dtype=np.uint64)
    np.minimum.at(sketches.reshape(-1), owner * SKETCH + (mixed >> _BIN_SHIFT).astype(np.int64), mixed)
    run_bounds = np.searchsorted(runs, bounds).tolist()
    out = []
    for i, (first, last) in enumerate(itertools.pairwise(bounds.tolist())):
        bag = b""
        if last > first:
            kept = runs[run_bounds[i] : run_bounds[i + 1]]
            bag = ordered[kept].tobytes() + counts[run_bounds[i] : run_bounds[i + 1]].tobytes()
        words_hash = hashlib.sha256(hashes[first:last].tobytes()).hexdigest()
        out.append(Fingerprint(last - first, words_hash, bag, sketches[i].tobytes()))
    return out


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
    # Only the first lines are split: a document's whole text cost as much as its title was worth.
    for line in "\n".join(text.split("\n", 20)[:20]).splitlines()[:20]:
        if not line.strip():
            continue
        match = _HEADING.match(line.strip())
        return clip(match.group(1)) if match else None
    return None


def clip(title: str) -> str:
    title = " ".join(title.split())
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"
