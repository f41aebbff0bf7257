"""The engine's note of what it sent, by the bridge's ref: a send repeated (the engine died before
it answered, the bridge asked again) is answered with the message already sent, never sent twice.

One JSON line per message sent, appended in the channel's folder the moment WhatsApp took it;
the latest `KEPT` are read back when an engine starts. A ref is the bridge's name for one message
of one answer, so only the last few minutes' matter; the file is rewritten with the latest `KEPT`
once it holds twice as many.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from pathlib import Path

FILE = "sent.jsonl"
KEPT = 512


class SentNotes:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._sent: OrderedDict[str, str] = OrderedDict()
        self._lines = 0
        if path.exists():
            for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    note = json.loads(raw)
                    self._sent[str(note["ref"])] = str(note["message"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by a crash: that send was never answered either
                self._lines += 1
            while len(self._sent) > KEPT:
                self._sent.popitem(last=False)

    def get(self, ref: str) -> str | None:
        """The id of the message sent under `ref`, if one was."""
        with self._lock:
            return self._sent.get(ref)

    def add(self, ref: str, message: str) -> None:
        with self._lock:
            self._sent[ref] = message
            while len(self._sent) > KEPT:
                self._sent.popitem(last=False)
            if self._lines >= 2 * KEPT:
                self._rewrite()
                return
            with self._path.open("a", encoding="utf-8") as notes:
                notes.write(json.dumps({"ref": ref, "message": message}) + "\n")
                notes.flush()
                os.fsync(notes.fileno())
            self._lines += 1

    def _rewrite(self) -> None:
        fresh = self._path.with_suffix(".tmp")
        with fresh.open("w", encoding="utf-8") as notes:
            notes.writelines(json.dumps({"ref": r, "message": m}) + "\n" for r, m in self._sent.items())
            notes.flush()
            os.fsync(notes.fileno())
        os.replace(fresh, self._path)
        self._lines = len(self._sent)
