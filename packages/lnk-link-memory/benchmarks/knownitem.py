"""A known-item set of real text: manual pages, each asked for by a one-line description of it.

Every manual page opens with a NAME line its authors wrote: `chmod - change file mode bits`. That
line is a person's one-line description of exactly one document, so it is held out: the page is
kept without it (titled by its command's name alone), and the description, told again the way
someone who half-remembers it would, is the question. The telling is made reproducibly from the
page's path: the command's own name left out (nobody who knew it would ask), everyday words in
place of a manual's (show for display, folder for directory, ...) about half the time, a word of a
long line forgotten now and then, and now and then a way of asking in front ("docs for").

Pages come from sections 1, 3, 5, 7 and 8 (not the thousands of near-identical `gcloud` pages),
only those whose description no other page shares, taken in an order fixed by their paths' hashes.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from corpus import cache_folder, every_page

SECTIONS = ("man1", "man3", "man5", "man7", "man8")
VERSION = "2"
"""Which way the set is made: a cached set of another version is made again."""

EVERYDAY = {
    "display": "show",
    "displays": "shows",
    "print": "show",
    "prints": "shows",
    "directory": "folder",
    "directories": "folders",
    "utility": "tool",
    "program": "tool",
    "create": "make",
    "creates": "makes",
    "remove": "delete",
    "removes": "deletes",
    "execute": "run",
    "executes": "runs",
    "modify": "change",
    "manipulate": "change",
    "retrieve": "get",
    "obtain": "get",
    "information": "info",
    "specified": "given",
    "terminate": "stop",
    "invoke": "call",
    "allocate": "reserve",
    "compute": "work out",
    "calculate": "work out",
    "determine": "find out",
    "obsolete": "old",
    "examine": "look at",
    "configuration": "settings",
    "configure": "set up",
    "initialize": "set up",
    "arbitrary": "any",
    "multiple": "several",
    "compress": "shrink",
    "decompress": "unpack",
    "archive": "bundle",
    "archives": "bundles",
}
"""A manual's words and the plainer ones a person uses for them."""

ASKING = ("", "", "", "the manual page on ", "docs for ", "something about ", "that page: ")
_VERSION = re.compile(r"\b(v|version )?\d+(\.\d+)+\b", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z0-9][A-Za-z0-9+._'-]*")


@dataclass(frozen=True)
class Item:
    path: str
    """The document's path in the set's folder."""
    query: str
    description: str
    """The page's own NAME line description, as written."""


def _split(page: str) -> tuple[list[str], str, str] | None:
    """(the command's names, its description, the page without its title and NAME section)."""
    _, _, rest = page.partition("\n")
    section = re.search(r"\n## Name\n(.*?)(?=\n## |\Z)", rest, flags=re.DOTALL)
    if section is None:
        return None
    line = " ".join(section.group(1).split())
    if " - " not in line:
        return None
    names, description = line.split(" - ", 1)
    body = rest[: section.start()] + "\n" + rest[section.end() :]
    return [n.strip() for n in names.split(",") if n.strip()], description.strip(), body.strip()


def _telling(description: str, names: list[str], key: str) -> str:
    """The description as someone who half-remembers the page would ask for it."""
    rng = random.Random(hashlib.sha256(key.encode()).digest())
    named = {n.lower() for n in names}
    words = []
    for word in _WORDS.findall(_VERSION.sub("", description)):
        lowered = word.lower().strip(".'")
        if lowered in named or any(lowered == n or lowered.startswith(n + "(") for n in named):
            continue
        if lowered in EVERYDAY and rng.random() < 0.5:
            lowered = EVERYDAY[lowered]
        words.append(lowered)
    if len(words) >= 5 and rng.random() < 0.5:
        del words[rng.randrange(1, len(words))]
    return (rng.choice(ASKING) + " ".join(words)).strip()


def known_items(documents: int = 500, questions: int = 300) -> tuple[Path, list[Item]]:
    """A folder of `documents` pages and `questions` known-item questions over it (made once, cached)."""
    folder = cache_folder() / f"known-{documents}-{questions}-v{VERSION}"
    listing = folder.with_suffix(".json")
    if listing.exists() and (folder / ".complete").exists():
        return folder, [Item(**item) for item in json.loads(listing.read_text())]
    every = every_page()
    pages: list[tuple[str, list[str], str, str]] = []
    for section in SECTIONS:
        for page in sorted((every / section).glob("*.md")):
            if page.name.startswith("gcloud"):
                continue
            split = _split(page.read_text())
            if split is not None and len(split[1].split()) >= 3:
                pages.append((f"{section}/{page.name}", *split))
    told: dict[str, int] = {}
    for _, _, description, _ in pages:
        told[description.lower()] = told.get(description.lower(), 0) + 1
    unique = [p for p in pages if told[p[2].lower()] == 1]
    unique.sort(key=lambda p: hashlib.sha256(p[0].encode()).hexdigest())
    chosen = unique[:documents]
    if len(chosen) < documents:
        raise SystemExit(f"Only {len(chosen)} manual pages with a description of their own here; wanted {documents}.")
    shutil.rmtree(folder, ignore_errors=True)
    items: list[Item] = []
    for path, names, description, body in chosen:
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {names[0]}\n\n{body}\n")
        if len(items) < questions:
            query = _telling(description, names, path)
            if len(query.split()) >= 2:
                items.append(Item(path, query, description))
    (folder / ".complete").write_text(str(documents))
    listing.write_text(json.dumps([item.__dict__ for item in items], indent=1))
    return folder, items
