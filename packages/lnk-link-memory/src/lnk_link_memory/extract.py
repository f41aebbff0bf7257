"""Text from PDF and Word documents, extracted in a child process that can't hurt the engine.

The engine's own program runs again as `python -I -m lnk_link_memory.extract <pdf|docx>`, with no
environment, the file handed as its stdin (it opens nothing itself), and limits on CPU time, memory
and wall time: the process serving memory holds every bound agent's folder, and a parser is where
a crafted file would get in. A file it can't read is left out and the status says why.
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import zipfile

from lnk_link_memory.limits import (
    EXTRACT_CPU_SECONDS,
    EXTRACT_MEMORY_BYTES,
    EXTRACT_WALL_SECONDS,
    MAX_FILE_BYTES,
    MAX_TEXT_CHARS,
)

_TOO_LONG = 3
_UNREADABLE = 4
_DOCX_INFLATED_BYTES = 64 * 1024 * 1024
"""A .docx declaring more than this once unzipped is a zip bomb, not a document."""


class ExtractFailed(Exception):
    """Why a document's text was left out, in words for the status."""


def extract(handle: int, suffix: str) -> str:
    """The text of the open PDF or .docx `handle` (read from where it is), extracted by a child."""
    kind = suffix.lower().lstrip(".")
    try:
        child = subprocess.run(
            [sys.executable, "-I", "-m", "lnk_link_memory.extract", kind],
            stdin=handle,
            capture_output=True,
            env={},
            timeout=EXTRACT_WALL_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ExtractFailed(f"its text took over {EXTRACT_WALL_SECONDS:.0f} s to extract: left out") from None
    if child.returncode == 0:
        return child.stdout.decode("utf-8", errors="replace")
    if child.returncode == _TOO_LONG:
        raise ExtractFailed(f"its text runs past {MAX_TEXT_CHARS // 2**20} MiB: left out, not half read")
    if child.returncode == _UNREADABLE:
        detail = child.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise ExtractFailed(f"not a readable {kind.upper()} ({detail[-1][:200] if detail else 'unknown error'})")
    if child.returncode < 0:
        raise ExtractFailed(f"its extraction was stopped at its limits (signal {-child.returncode}): left out")
    raise ExtractFailed(f"its extraction failed (exit {child.returncode}), likely at its memory limit: left out")


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (EXTRACT_CPU_SECONDS, EXTRACT_CPU_SECONDS + 1))
    resource.setrlimit(resource.RLIMIT_AS, (EXTRACT_MEMORY_BYTES, EXTRACT_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class _TooLong(Exception):
    pass


def _pdf(data: bytes) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    pages: list[str] = []
    size = 0
    for page in reader.pages:
        text = page.extract_text() or ""
        size += len(text) + 2
        if size > MAX_TEXT_CHARS:
            raise _TooLong
        pages.append(text)
    return "\n\n".join(pages)


def _docx(data: bytes) -> str:
    import docx2txt  # type: ignore[import-untyped]

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        declared = sum(member.file_size for member in archive.infolist())
    if declared > _DOCX_INFLATED_BYTES:
        raise ValueError(f"it unzips to {declared // 2**20} MiB: a zip bomb, not a document")
    text = str(docx2txt.process(io.BytesIO(data)))
    if len(text) > MAX_TEXT_CHARS:
        raise _TooLong
    return text


def main() -> int:
    _limit()
    kind = sys.argv[1] if len(sys.argv) > 1 else ""
    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    try:
        if len(data) > MAX_FILE_BYTES:
            raise ValueError("larger than the file limit")
        text = {"pdf": _pdf, "docx": _docx}[kind](data)
    except _TooLong:
        return _TOO_LONG
    except MemoryError:
        raise
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return _UNREADABLE
    sys.stdout.buffer.write(text.encode("utf-8", errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
