"""`.lnk-configured`: whether an adapter's `configure` has anything left to do.

An adapter that writes its harness's own config keeps, in the harness's home, a hash over all it
was written from and the files as written: the settings given (without any key), the harness's
release and pin, the adapter's own release and files, the first port. When all of it matches,
`configure` does nothing; a harness that edited its own config no longer matches, so it is
configured again and Link's settings win at the next start.

    done = configured.digest(settings, first, harness="openclaw 2026.9.6 <pin>",
                             adapter="lnk-openclaw 0.1.0", code=Path(__file__).parent, files=[config])
    if configured.unchanged(home, done): return "nothing to do"
    ... write the config ...
    configured.mark(home, configured.digest(...))   # over the files as now written
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from link_plugin.files import write_atomic
from link_plugin.harness import HarnessSettings

MARK = ".lnk-configured"


def digest(settings: HarnessSettings, first: int, *, harness: str, adapter: str, code: Path, files: list[Path]) -> str:
    """The hash over what a config is written from: `harness` and `adapter` name their releases
    (and the harness's pin), `code` is the adapter's package folder (a rebuilt adapter keeps its
    version, not its digest), `files` the config files as they are now."""
    given = settings.model_dump(mode="json", exclude={"endpoint_key"})
    if given.get("model"):
        given["model"].pop("key", None)
    hashed = hashlib.sha256()
    for part in (json.dumps(given, sort_keys=True), harness, adapter, f"port {first}"):
        hashed.update(part.encode() + b"\0")
    for path in sorted(code.glob("*.py")):
        hashed.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for path in files:
        hashed.update(path.name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"-") + b"\0")
    return hashed.hexdigest()


def unchanged(home: Path, done: str) -> bool:
    """Whether the home's mark is `done`: the config is as the settings say."""
    marker = home / MARK
    return marker.exists() and marker.read_text().strip() == done


def mark(home: Path, done: str) -> None:
    write_atomic(home / MARK, done)
