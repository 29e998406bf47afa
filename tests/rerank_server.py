"""A local HTTP server that answers `POST /v1/rerank` as Cohere, Jina, vLLM and Infinity do — or fails the
way a real one can: slow, 500, an answer that misses passages. Runs in a thread on a free loopback port.

Its "model" scores a passage by how often the `favourite` word occurs in it, so a test knows the order
a reranked search must come back in."""

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Behaviour(StrEnum):
    NORMAL = "normal"
    SLOW = "slow"  # answers correctly, but only after `delay` seconds
    ERROR_500 = "error-500"
    PARTIAL = "partial"  # scores only the first passage


@dataclass
class RerankServer:
    url: str  # the API root, as CORTEX_RERANKER_BASE_URL takes it
    favourite: str = "zebra"
    behaviour: Behaviour = Behaviour.NORMAL
    delay: float = 3.0
    requests: list[dict[str, Any]] = field(default_factory=list)

    def scores(self, documents: list[str]) -> list[dict[str, Any]]:
        counts = [document.lower().split().count(self.favourite) for document in documents]
        if self.behaviour is Behaviour.PARTIAL:
            counts = counts[:1]
        ranked = sorted(range(len(counts)), key=lambda i: -counts[i])
        return [{"index": i, "relevance_score": counts[i] / 10} for i in ranked]


@contextmanager
def serving_reranker() -> Iterator[RerankServer]:
    state = RerankServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: Any) -> None:
            if state.behaviour is Behaviour.SLOW:
                time.sleep(state.delay)
            data = json.dumps(body).encode()
            with suppress(BrokenPipeError, ConnectionResetError):  # a client that stopped waiting
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            state.requests.append(body)
            if self.path != "/v1/rerank":
                self._answer(404, {"detail": "Not Found"})
            elif state.behaviour is Behaviour.ERROR_500:
                self._answer(500, {"detail": "boom"})
            else:
                self._answer(200, {"results": state.scores(list(body["documents"]))})

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, name="rerank", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
