"""A small OpenAI-compatible HTTP server for tests: it answers from a script.

Real HTTP on 127.0.0.1, spoken to by the real ``openai`` client. Embeddings are
deterministic bag-of-words vectors (texts sharing words are close); chat completions
pop the next scripted reply. Every request is recorded for assertions.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def bag_of_words(text: str, dims: int) -> list[float]:
    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dims] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class ScriptedOpenAI:
    """Start with ``with ScriptedOpenAI(dims=...) as server:``; ``server.base_url``."""

    def __init__(self, dims: int = 64, replies: list[dict[str, Any]] | None = None) -> None:
        self.dims = dims
        self.replies = list(replies or [])
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body})
                if self.path.endswith("/embeddings"):
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    payload: dict[str, Any] = {
                        "object": "list", "model": body["model"],
                        "data": [{"object": "embedding", "index": i,
                                  "embedding": bag_of_words(t, outer.dims)}
                                 for i, t in enumerate(texts)],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }  # fmt: skip
                elif self.path.endswith("/chat/completions") and outer.replies:
                    payload = outer.replies.pop(0)
                else:
                    self.send_response(500)
                    self.end_headers()
                    return
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
