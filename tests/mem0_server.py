"""A local HTTP server that answers like mem0's REST API (`POST /search`, `GET /memories`) — or fails
the way a real one can: slow, 404 on listing, 500, an answer of its own. Runs in a thread on a free
loopback port."""

import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cortex_embedded_servers import free_port
from tests.json_http import JsonHandler, serving


class Behaviour(StrEnum):
    NORMAL = "normal"
    SLOW = "slow"  # answers correctly, but only after `delay` seconds
    LIST_404 = "list-404"  # a server without the listing endpoint; search works
    ERROR_500 = "error-500"  # every call fails
    RAW = "raw"  # every call is answered 200 with `raw`, the bytes as they are


@dataclass
class Mem0Server:
    url: str
    behaviour: Behaviour
    delay: float
    memories: list[dict[str, Any]] = field(default_factory=list)
    raw: bytes = b""
    raw_length_sent: bool = True  # False: no Content-Length, the body ends when the connection closes
    requests: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # method, path, params/body

    def add(self, memory: str, *, user_id: str, agent_id: str | None = None, run_id: str | None = None) -> None:
        self.memories.append(
            {
                "id": f"m-{len(self.memories) + 1}",
                "memory": memory,
                "hash": str(abs(hash(memory))),
                "metadata": {"origin": "test"},
                "created_at": "2026-11-30T10:00:00-08:00",
                "updated_at": None,
                "user_id": user_id,
                "agent_id": agent_id,
                "run_id": run_id,
            }
        )

    def matching(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        keys = ("user_id", "agent_id", "run_id")
        return [m for m in self.memories if all(params.get(k) in (None, m[k]) for k in keys)]


def unused_url() -> str:
    """A loopback URL nothing listens on: connecting is refused (a backend that is down)."""
    return f"http://127.0.0.1:{free_port('127.0.0.1')}"


@contextmanager
def serving_mem0(behaviour: Behaviour = Behaviour.NORMAL, delay: float = 3.0) -> Iterator[Mem0Server]:
    state = Mem0Server(url="", behaviour=behaviour, delay=delay)

    class Handler(JsonHandler):
        def _answer(self, status: int, body: Any) -> None:
            if state.behaviour is Behaviour.SLOW:
                time.sleep(state.delay)
            if state.behaviour is Behaviour.RAW:
                self._answer_raw()
            else:
                self.send_json(status, body)

        def _answer_raw(self) -> None:
            with suppress(BrokenPipeError, ConnectionResetError):  # the client may stop reading early
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if state.raw_length_sent:
                    self.send_header("Content-Length", str(len(state.raw)))
                self.end_headers()
                self.wfile.write(state.raw)

        def do_GET(self) -> None:  # noqa: N802 - http.server names them
            url = urlsplit(self.path)
            params = {k: v[0] for k, v in parse_qs(url.query).items()}
            state.requests.append(("GET", url.path, params))
            if state.behaviour is Behaviour.ERROR_500:
                self._answer(500, {"detail": "boom"})
            elif url.path != "/memories" or state.behaviour is Behaviour.LIST_404:
                self._answer(404, {"detail": "Not Found"})
            elif not any(params.get(k) for k in ("user_id", "agent_id", "run_id")):
                self._answer(400, {"detail": "At least one identifier is required."})
            else:
                self._answer(200, {"results": state.matching(params)})

        def do_POST(self) -> None:  # noqa: N802 - http.server names them
            body = self.read_json()
            state.requests.append(("POST", self.path, body))
            if state.behaviour is Behaviour.ERROR_500:
                self._answer(500, {"detail": "boom"})
            elif self.path != "/search":
                self._answer(404, {"detail": "Not Found"})
            else:
                words = set(str(body.get("query", "")).lower().split())
                hits = [
                    {**m, "score": len(words & set(m["memory"].lower().split())) / max(len(words), 1)}
                    for m in state.matching(body)
                ]
                hits = sorted((h for h in hits if h["score"] > 0), key=lambda h: -h["score"])
                self._answer(200, {"results": hits[: int(body.get("limit", 100))]})

    with serving(Handler, "mem0") as root:
        state.url = root
        yield state
