"""The sizes Link Memory keeps to, in one place."""

from __future__ import annotations

MAX_FILE_BYTES = 32 * 1024 * 1024
"""A file larger than this is left out, not half read."""
MAX_TEXT_CHARS = 2 * 1024 * 1024
"""A document whose text runs past this is left out, not half read."""

FOLDER_DEPTH = 64
"""Folders nested deeper than this are left out: the walk holds a handle for each level it is inside."""

CHUNK_CHARS = 1500
"""Chunks are split at headings, then blank lines, up to about this many characters."""

TOKEN_CHARS = 4
"""What a token is counted as when an answer is sized."""
ANSWER_TOKENS = 6000
"""Every answer stays under about this many tokens unless the call asks another size."""
SEARCH_PAGE = 10
"""At most this many results in one page of a search."""
TITLE_CHARS = 200

RANKED = 50
"""Each list (words, meaning) ranks its best this many documents."""
RRF_K = 60
TIE = 0.1
"""Within a tenth of the best score around them, documents count as ties: the newest comes first. A
tenth of the list's own scale: the spread of its first page (search.newest_among_ties)."""
COPY_WORDS = 20
COPY_SHARE = 0.9
"""From twenty words on, documents sharing nine in ten of their words are copies."""

LINKS_PER_DOCUMENT = 1000
LINK_BYTES = 512
REMOVED_KEPT = 10_000
"""The paths and titles of the latest this many deleted documents are kept."""

NOTES_BYTES = 4096
"""[tool.memory] notes by Link's default: what remember writes up to."""

EXTRACT_CPU_SECONDS = 20
EXTRACT_MEMORY_BYTES = 768 * 1024 * 1024
EXTRACT_WALL_SECONDS = 40.0

ENGINE_LINGER_SECONDS = 5.0
"""The engine ends this long after its last session."""
SCAN_SECONDS = 2.0
"""How often a folder is looked at again for changes (longer for folders slow to look at)."""
