"""Reading and writing Link's own files: TOML that names the line, writes that are never half done."""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any, TypeVar

import tomli_w
from pydantic import BaseModel, ValidationError

from link_plugin.answers import describe_errors
from link_plugin.errors import LinkError

M = TypeVar("M", bound=BaseModel)


class SettingsError(LinkError):
    """A settings file that can't be read as it is: names the file and the line."""


def write_atomic(path: Path, data: str | bytes, mode: int = 0o600) -> None:
    """Write the whole file in one step: a temporary file in the same folder, renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """The line where the first key of a validation error's location is written, if found."""
    names = [str(part) for part in loc if isinstance(part, str)]
    if not names:
        return None
    key = re.compile(rf"^\s*(\[+\s*)?([\w.-]*\.)?{re.escape(names[-1])}\s*[=\]]")
    for number, line in enumerate(text.splitlines(), start=1):
        if key.match(line):
            return number
    return None


def read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise SettingsError(f"{path}: can't be read ({exc.strerror}).") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: {exc}.", "Fix that line (or move the file aside to start again).") from exc


def load_toml(path: Path, model: type[M]) -> M:
    """Parse a settings file into its model, naming the file and line of what's wrong."""
    data = read_toml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        line = line_of(path.read_text(), tuple(first["loc"]))
        where = f"{path}, line {line}" if line else str(path)
        raise SettingsError(f"{where}: {describe_errors(exc)}.", "Fix the value and try again.") from exc


def dump_toml(model: BaseModel) -> str:
    return tomli_w.dumps(model.model_dump(mode="json", exclude_none=True))


def save_toml(path: Path, model: BaseModel) -> None:
    write_atomic(path, dump_toml(model))
