"""A plugin's answers that hold for a whole release, kept so that no start asks them again.

What a harness adapter answers to `describe` (for one `LNK_PORT`) and what an outside plugin
answers to `contract` depend only on the plugin's release. Each is kept in Link's settings folder
(`cache/answers/`, never reached by a sandbox) with the release it came from: the executable's
resolved path, size and modification time (a new release rewrites it) and the contract lnk speaks.
When any of these differ the plugin is asked again, so an upgrade, a reinstall or a `touch` of the
executable is enough to be asked afresh.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from link_plugin.answers import Answer
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.files import write_atomic
from link_plugin.layout import Layout
from link_plugin.model import Model

A = TypeVar("A", bound=Answer)


class Kept(Model):
    release: list[str | int]
    """[resolved path, size, modification time in ns, lnk's contract version]: whom it was asked of."""
    answer: dict[str, Any]


def release_of(executable: str) -> list[str | int]:
    path = Path(executable).resolve()
    stat = path.stat()
    return [str(path), stat.st_size, stat.st_mtime_ns, CONTRACT_VERSION]


def kept_at(layout: Layout, executable: str, question: str) -> Path:
    name = hashlib.sha256(str(Path(executable).resolve()).encode()).hexdigest()[:24]
    return layout.config / "cache" / "answers" / f"{name}-{question}.json"


def answer(layout: Layout, executable: str, question: str, model: type[A], ask: Callable[[], A]) -> A:
    """The plugin's answer to `question` in this release: kept, or asked (by `ask`) and kept."""
    release = release_of(executable)
    path = kept_at(layout, executable, question)
    try:
        kept = Kept.model_validate_json(path.read_bytes())
        if kept.release == release:
            return model.model_validate(kept.answer)
    except (OSError, ValidationError):
        pass  # none kept, or kept by another lnk: asked again
    asked = ask()
    write_atomic(path, Kept(release=release, answer=asked.model_dump(mode="json")).model_dump_json())
    return asked
