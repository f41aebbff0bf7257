"""An agent's keys: model providers' and channels' secrets, in a 0600 file outside every sandbox.

Keys are handed only to the proxy (a model's) and to a channel's bridge (its token), never to a
harness or any file a sandbox sees. Names: a model provider's key by the provider's name
(`openai`, `anthropic`, `openrouter`); a channel's secret as `<channel>/<field>` (`telegram/bot-token`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path


class KeyStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        return {str(k): str(v) for k, v in data.items()}

    def get(self, name: str) -> str | None:
        return self._read().get(name)

    def names(self) -> list[str]:
        return sorted(self._read())

    def set(self, name: str, value: str) -> None:
        data = self._read()
        data[name] = value
        self._write(data)

    def delete(self, name: str) -> bool:
        data = self._read()
        if data.pop(name, None) is None:
            return False
        self._write(data)
        return True

    def _write(self, data: dict[str, str]) -> None:
        # Imported here: the sandbox's proxy reads keys and never writes them, and loads nothing more.
        from link_plugin.files import write_atomic

        write_atomic(self.path, json.dumps(data, indent=2, sort_keys=True), mode=0o600)

    def secure(self) -> bool:
        """True when nobody but the owner can read the file (or there is none)."""
        try:
            return os.stat(self.path).st_mode & 0o077 == 0
        except FileNotFoundError:
            return True
