"""A local stand-in for an OpenAI-compatible /v1/embeddings server (what `lnk model serve` provides).

Its vectors are bags of hashed words: texts sharing words point the same way, which is all a test
of the path through the server needs. It records what it was asked and can be slowed down.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSIONS = 64


def vector(text: str) -> list[float]:
    values = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        values[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return values


class FakeEmbeddings:
    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"path": self.path, **body})
                if self.path != "/v1/embeddings":
                    self.send_error(404)
                    return
                time.sleep(owner.delay)
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": vector(t)} for i, t in enumerate(texts)]
                payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeEmbeddings:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
