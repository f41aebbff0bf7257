"""Links between documents: markdown links and [[wiki links]], kept as written, resolved when asked.

A markdown link names a path, relative to its document (or, failing that, to its source's root);
a wiki link names a document by its path or its file's name, several of a name meaning the
shortest path. Nothing is followed on disk, and a link to the web or out of the folder is no link.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from lnk_link_memory.limits import LINK_BYTES, LINKS_PER_DOCUMENT
from lnk_link_memory.store.documents import Documents

_MARKDOWN = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'(][^)\n]*)?\)")
_WIKI = re.compile(r"!?\[\[([^\]\n|#]*)(?:#[^\]\n|]*)?(?:\|[^\]\n]*)?\]\]")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_SUFFIX = re.compile(r"\.(md|markdown|txt|text|pdf|docx)$", re.IGNORECASE)

MARKDOWN = "markdown"
WIKI = "wiki"


@dataclass(frozen=True)
class Link:
    kind: str
    target: str
    """As written."""
    key: str
    """What it is matched by: a path in memory (markdown) or a lowercased name or path (wiki)."""


def without_suffix(path: str) -> str:
    return _SUFFIX.sub("", path)


def found_in(text: str, path: str, prefix: str) -> list[Link]:
    """The links of the document at `path` (under the source whose paths begin with `prefix`)."""
    if "](" not in text and "[[" not in text:
        return []  # most documents link nowhere: told at once, without a pattern walking every bracket
    links: list[tuple[int, Link]] = []
    for match in _MARKDOWN.finditer(text):
        link = _markdown(match.group(1), path, prefix)
        if link is not None:
            links.append((match.start(), link))
    for match in _WIKI.finditer(text):
        name = match.group(1).strip()
        if name and len(name.encode()) <= LINK_BYTES and not _SCHEME.match(name):
            key = without_suffix(name.strip("/")).lower()
            if ".." not in key.split("/"):
                links.append((match.start(), Link(WIKI, name, key)))
    links.sort(key=lambda pair: pair[0])
    return [link for _, link in links[:LINKS_PER_DOCUMENT]]


def _markdown(target: str, path: str, prefix: str) -> Link | None:
    if len(target.encode()) > LINK_BYTES or _SCHEME.match(target) or target.startswith(("//", "#")):
        return None
    clean = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not clean:
        return None
    if clean.startswith("/"):
        joined = posixpath.normpath(prefix + clean.lstrip("/"))
    else:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), clean))
    if joined.startswith("..") or (prefix and not joined.startswith(prefix)):
        return None  # out of the folder
    return Link(MARKDOWN, target, joined)


def resolve(documents: Documents, kind: str, key: str) -> str | None:
    """The indexed document a link names now, or None."""
    if kind == MARKDOWN:
        for candidate in (key, key + ".md"):
            if documents.has(candidate):
                return candidate
        return None
    name = key.rsplit("/", 1)[-1]
    for path, stem in documents.named(name):
        if "/" not in key or stem == key or stem.endswith("/" + key):
            return str(path)
    return None


def keys_naming(path: str, stem: str) -> list[str]:
    """Every key a link to this document could have been stored under."""
    keys = {path, without_suffix(path)}
    parts = stem.split("/")
    keys.update("/".join(parts[i:]) for i in range(len(parts)))
    return sorted(keys)
