"""A plugin's answers that hold for a whole release, kept so that no start asks them again.

What a harness adapter answers to `describe` (for one `LNK_PORT`), what an outside plugin
answers to `contract`, and what the tool a plugin defines lists (the tool bridge's `tools/list`,
for one definition) depend only on the plugin's release. Each is kept in Link's settings folder
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

from pydantic import BaseModel, ValidationError

from link_plugin.contract import CONTRACT_VERSION
from link_plugin.files import write_atomic
from link_plugin.layout import Layout
from link_plugin.model import Model

A = TypeVar("A", bound=BaseModel)


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


def kept(layout: Layout, executable: str, question: str, model: type[A]) -> A | None:
    """The answer to `question` kept from this release of the plugin; None if there is none."""
    try:
        found = Kept.model_validate_json(kept_at(layout, executable, question).read_bytes())
        if found.release == release_of(executable):
            return model.model_validate(found.answer)
    except (OSError, ValidationError):
        pass  # none kept, kept by another lnk, or the plugin is gone: asked again
    return None


def keep(layout: Layout, executable: str, question: str, given: BaseModel) -> None:
    """Keep the plugin's answer to `question`, for as long as this release is installed."""
    release = release_of(executable)
    write_atomic(
        kept_at(layout, executable, question),
        Kept(release=release, answer=given.model_dump(mode="json", by_alias=True)).model_dump_json(),
    )


def forget(layout: Layout, question: str) -> None:
    """Forget every answer kept to `question`, whichever plugin's (a tool's listing, as the tool goes)."""
    for path in (layout.config / "cache" / "answers").glob(f"*-{question}.json"):
        path.unlink(missing_ok=True)


def answer(layout: Layout, executable: str, question: str, model: type[A], ask: Callable[[], A]) -> A:
    """The plugin's answer to `question` in this release: kept, or asked (by `ask`) and kept."""
    found = kept(layout, executable, question, model)
    if found is not None:
        return found
    asked = ask()
    keep(layout, executable, question, asked)
    return asked
