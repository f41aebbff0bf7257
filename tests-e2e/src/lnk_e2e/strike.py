"""Striking the moment Link Harness writes an event: kill it right after it kept a message, made
a tool call, finished an answer or sent the answer's end.

Link Harness names every event by linking a whole file to its number (`events/00000007.json`),
so the name's appearance is the instant the event exists. `Strike` watches the events folder with
inotify (the kernel tells at once, where polling would come late) on a thread of its own, and runs
its action as soon as an event of the kind it waits for is named:

    strike = Strike(conversation.events_folder).start()
    strike.arm("message", lambda: os.kill(harness, signal.SIGKILL))
    ... send the message ...
    strike.struck.wait(60)

A `delivered` event is named the moment the answer's last bytes (`data: [DONE]`) went out on its
request, so striking at it kills the harness right after the end of the answer left it; `fields`
narrow what is struck at (`arm("delivered", kill, via="request")`: not an older answer that a
recovery confirms meanwhile).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from inotify_simple import INotify, flags

from lnk_e2e.conversation import is_event


class Strike:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.struck = threading.Event()
        """Set once the armed action ran."""
        self.event: int | None = None
        """The number of the event it struck at."""
        self._armed: tuple[str, dict[str, object], Callable[[], None]] | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._inotify = INotify()
        self._inotify.add_watch(folder, flags.CREATE | flags.MOVED_TO)
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> Strike:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(10)
        self._inotify.close()

    def arm(self, kind: str, action: Callable[[], None], **fields: object) -> None:
        """Run `action` once, as soon as an event of `kind` (with these `fields`) is named."""
        with self._lock:
            self.struck.clear()
            self.event = None
            self._armed = (kind, fields, action)

    def disarm(self) -> None:
        with self._lock:
            self._armed = None

    def _watch(self) -> None:
        while not self._stopping.is_set():
            for seen in self._inotify.read(timeout=200):
                if self._armed is None or not is_event(seen.name):
                    continue
                try:
                    event = json.loads((self.folder / seen.name).read_bytes())
                except (OSError, ValueError):
                    continue
                with self._lock:
                    if self._armed is None:
                        continue
                    kind, fields, action = self._armed
                    if event.get("kind") != kind or any(event.get(k) != v for k, v in fields.items()):
                        continue
                    self._armed = None
                    action()
                    self.event = int(seen.name[:8])
                    self.struck.set()
