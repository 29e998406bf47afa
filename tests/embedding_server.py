"""A real HTTP server speaking the OpenAI `/v1/embeddings` shape, scripted to misbehave on request.

Vectors are bag-of-words hashes (seeded by the model name), not normalized, so a text and a query
that share words are close — enough for semantic search to find a document in a test.
"""

import contextlib
import hashlib
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cortex_embedded_servers import free_port

WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Ok:
    pass


@dataclass(frozen=True)
class Status:
    code: int
    retry_after: str | None = None


@dataclass(frozen=True)
class Slow:
    seconds: float


@dataclass(frozen=True)
class Answer:
    """This vector for every input: another dimension, NaN, infinity or zeros."""

    vector: list[float]


Behaviour = Ok | Status | Slow | Answer


def bag_of_words(text: str, dimension: int, seed: str) -> list[float]:
    vector = [0.0] * dimension
    for word in WORD.findall(text.lower()):
        vector[int(hashlib.sha256(f"{seed}:{word}".encode()).hexdigest(), 16) % dimension] += 1.0
    if not any(vector):
        vector[0] = 1.0
    return vector


class FakeEmbeddingServer:
    def __init__(self, *, dimension: int = 32, port: int | None = None) -> None:
        self.dimension = dimension
        self.port = port or free_port("127.0.0.1")
        self.script: deque[Behaviour] = deque()  # consumed one per request; empty means Ok()
        self.refuse_word: str | None = None  # a request with a text holding it: 400, as a text too long would
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def embeddings_requests(self) -> int:
        with self._lock:
            return len(self.requests)

    def start(self) -> "FakeEmbeddingServer":
        server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="fake-embeddings", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Behaviour:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            return self.script.popleft() if self.script else Ok()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
                pass

            def _send(self, code: int, payload: object, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                if self.path != "/v1/embeddings":
                    self._send(404, {"error": "not found"})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                behaviour = fake._next(body, dict(self.headers.items()))
                if fake.refuse_word is not None and any(fake.refuse_word in text for text in body["input"]):
                    behaviour = Status(400)
                if isinstance(behaviour, Slow):
                    time.sleep(behaviour.seconds)
                elif isinstance(behaviour, Status):
                    extra = {"Retry-After": behaviour.retry_after} if behaviour.retry_after is not None else None
                    self._send(behaviour.code, {"error": {"message": f"scripted {behaviour.code}"}}, extra)
                    return
                model = str(body.get("model", ""))
                data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": behaviour.vector
                        if isinstance(behaviour, Answer)
                        else bag_of_words(text, fake.dimension, model),
                    }
                    for i, text in enumerate(body["input"])
                ]
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
                    self._send(200, {"object": "list", "model": model, "data": list(reversed(data))})

        return Handler
