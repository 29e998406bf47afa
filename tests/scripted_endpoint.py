"""A real HTTP server shaped like OpenAI's `/v1/embeddings`, each answer scripted: vectors (padded, or pretty-
printed floats of a real model's length), an error status, an answer held back, or one trickled a byte at a
time. Like tests/embedding_server.py, but with the faults QA 34 found; that one is the services' tests'.
"""

import contextlib
import json
import random
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Vectors:
    """200, a vector of `dimension` random floats per input."""

    dimension: int = 16
    padding_bytes: int = 0  # a field nobody reads, to make the answer this much larger
    indent: int | None = None  # pretty-printed, as some servers answer
    declare_length: bool = True  # else the body ends when the connection closes
    trickle_seconds: float = 0.0  # the answer's last bytes are sent one at a time over this long
    late_seconds: float = 0.0  # nothing is sent for this long


@dataclass(frozen=True)
class Status:
    code: int
    retry_after: str | None = None


Answer = Vectors | Status
TRICKLED_BYTES = 20


def answer_body(answer: Vectors, inputs: list[str]) -> bytes:
    floats = random.Random(len(inputs))
    data = [
        {"object": "embedding", "index": i, "embedding": [floats.uniform(-1, 1) for _ in range(answer.dimension)]}
        for i in range(len(inputs))
    ]
    return json.dumps(
        {"object": "list", "padding": "x" * answer.padding_bytes, "data": data}, indent=answer.indent
    ).encode()


class ScriptedEndpoint:
    def __init__(self) -> None:
        self.script: deque[Answer] = deque()  # one per request; empty means Vectors()
        self.requests = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "ScriptedEndpoint":
        threading.Thread(target=self._server.serve_forever, name="scripted-endpoint", daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self) -> Answer:
        with self._lock:
            self.requests += 1
            return self.script.popleft() if self.script else Vectors()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
                pass

            def do_POST(self) -> None:
                inputs = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))["input"]
                answer = endpoint._next()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                    if isinstance(answer, Status):
                        self._send(answer.code, b'{"error": {"message": "scripted"}}', answer.retry_after)
                    else:
                        time.sleep(answer.late_seconds)
                        self._send_vectors(answer, answer_body(answer, inputs))

            def _send(self, code: int, body: bytes, retry_after: str | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(body)

            def _send_vectors(self, answer: Vectors, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if answer.declare_length:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not answer.trickle_seconds:
                    self.wfile.write(body)
                    return
                self.wfile.write(body[:-TRICKLED_BYTES])
                self.wfile.flush()
                for byte in body[-TRICKLED_BYTES:]:
                    time.sleep(answer.trickle_seconds / TRICKLED_BYTES)
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()

        return Handler
