"""A folder of real prose for the indexing race: this machine's manual pages, rendered to markdown.

Manual pages are written by people, about everything, and ship with Debian (man-db renders them;
the packages `manpages` and `manpages-dev` hold a few thousand more): nothing is fetched. Pages of
sections 1 and 8 are taken in name order, each rendered once to text, its section names made
headings, and kept in a cache folder, so every run races on the same documents.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MAN = Path("/usr/share/man")
MIN_CHARS = 3_000
"""Pages shorter than this (a usage line or two) are left out: the folder is one of documents."""
_SECTION = re.compile(r"^([A-Z][A-Z0-9 ,/&'()-]+)$")


def cache_folder() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "lnk-link-memory-bench"


def _render(page: Path) -> str | None:
    """A page as markdown: its NAME line as the title, each section a heading; None if it won't render."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MANWIDTH": "80", "LANG": "C.UTF-8"}
    try:
        shown = subprocess.run(
            ["man", "-l", "--no-hyphenation", "--no-justification", str(page)],
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    if shown.returncode != 0:
        return None
    text = re.sub(r".\x08", "", shown.stdout.decode("utf-8", errors="replace"))
    lines = text.splitlines()[1:-1]  # the running header and footer
    out: list[str] = []
    title = page.name.split(".")[0]
    for index, line in enumerate(lines):
        heading = _SECTION.match(line)
        if heading:
            out.append(f"\n## {heading.group(1).title()}\n")
            if heading.group(1) == "NAME" and index + 1 < len(lines):
                title = lines[index + 1].strip() or title
        else:
            out.append(line.strip())
    body = "\n".join(out).strip()
    return f"# {title}\n\n{body}\n" if len(body) >= MIN_CHARS else None


def every_page(gcloud: bool = False) -> Path:
    """Every manual page of this machine rendered (sections 1, 3, 5, 7 and 8), made once: the larger
    folders (the known-item set, 100,000 chunks) are taken from it. The thousands of `gcloud` pages,
    alike and slow to render, are left out unless asked for."""
    folder = cache_folder() / "man-every"
    done = folder / (".complete-gcloud" if gcloud else ".complete")
    if done.exists():
        return folder
    if shutil.which("man") is None:
        raise SystemExit("The benchmark's documents are manual pages: install man-db (apt-get install man-db).")
    pages = sorted(
        p
        for s in ("man1", "man3", "man5", "man7", "man8")
        for p in (MAN / s).glob("*")
        if p.is_file()
        and p.name.startswith("gcloud") == gcloud
        and not (folder / s / f"{p.name.split('.')[0]}.md").exists()
    )
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for page, text in zip(pages, pool.map(_render, pages), strict=True):
            if text is not None:
                (folder / page.parent.name).mkdir(parents=True, exist_ok=True)
                (folder / page.parent.name / f"{page.name.split('.')[0]}.md").write_text(text)
    done.write_text(str(len(pages)))
    return folder


def man_pages(documents: int) -> Path:
    """A folder of `documents` rendered pages (made once, then taken from the cache)."""
    folder = cache_folder() / f"man-{documents}"
    if (folder / ".complete").exists():
        return folder
    if shutil.which("man") is None:
        raise SystemExit("The benchmark's documents are manual pages: install man-db (apt-get install man-db).")
    pages = sorted(p for section in ("man1", "man8") for p in (MAN / section).glob("*") if p.is_file())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    written = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for start in range(0, len(pages), 64):
            for page, text in zip(pages[start : start + 64], pool.map(_render, pages[start : start + 64]), strict=True):
                if text is None or written >= documents:
                    continue
                section = page.parent.name
                (folder / section).mkdir(exist_ok=True)
                (folder / section / f"{page.name.split('.')[0]}.md").write_text(text)
                written += 1
            if written >= documents:
                break
    if written < documents:
        raise SystemExit(
            f"Only {written} manual pages of {MIN_CHARS:,}+ characters here; the benchmark wants {documents}:"
            " apt-get install manpages manpages-dev."
        )
    (folder / ".complete").write_text(str(written))
    return folder


DOC = Path("/usr/share/doc")
PIECE_CHARS = 12_000
"""Changelogs are cut into documents of about this many characters, at the start of an entry."""


def changelogs() -> Path:
    """This machine's Debian changelogs (written by people, over years; 100+ MB here), each cut into
    documents of about 12,000 characters at the start of an entry: made once, then cached."""
    folder = cache_folder() / "changelogs"
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    for source in sorted(DOC.glob("*/changelog*.gz")):
        try:
            text = gzip.decompress(source.read_bytes()).decode("utf-8", errors="replace")
        except (OSError, EOFError):
            continue
        pieces: list[str] = []
        current: list[str] = []
        size = 0
        for entry in re.split(r"\n(?=\S)", text):
            current.append(entry)
            size += len(entry)
            if size >= PIECE_CHARS:
                pieces.append("\n".join(current))
                current, size = [], 0
        if current:
            pieces.append("\n".join(current))
        target = folder / source.parent.name
        target.mkdir(parents=True, exist_ok=True)
        for number, piece in enumerate(pieces):
            title = piece.strip().splitlines()[0] if piece.strip() else source.parent.name
            name = f"{source.name.removesuffix('.gz')}-{number:04}.md"
            (target / name).write_text(f"# {title[:120]}\n\n{piece.strip()}\n")
    (folder / ".complete").write_text("")
    return folder


def real_text(documents: int) -> Path:
    """A folder of `documents` documents of real text: every rendered manual page (not `gcloud`'s),
    then changelog pieces, in an order fixed by their paths. Hard links: the walk reads each as the
    file it is."""
    folder = cache_folder() / f"real-{documents}"
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    pages = sorted(p for p in every_page().rglob("*.md") if not p.name.startswith("gcloud"))
    pieces = sorted(changelogs().rglob("*.md"), key=lambda p: hashlib.sha256(str(p).encode()).hexdigest())
    chosen = (pages + pieces)[:documents]
    if len(chosen) < documents:
        raise SystemExit(f"Only {len(chosen)} documents of real text here; the benchmark wants {documents}.")
    for source in chosen:
        target = folder / source.parent.parent.name / source.parent.name / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(source, target)
    (folder / ".complete").write_text(str(documents))
    return folder
