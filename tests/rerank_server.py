"""A local HTTP server that answers `POST /v1/rerank` as Cohere, Jina, vLLM and Infinity do — or fails the
way a real one can: slow, 500, an answer that misses passages. Runs in a thread on a free loopback port.

Its "model" scores a passage by how often the `favourite` word occurs in it, so a test knows the order
a reranked search must come back in."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tests.json_http import JsonHandler, serving


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

    class Handler(JsonHandler):
        def _answer(self, status: int, body: Any) -> None:
            if state.behaviour is Behaviour.SLOW:
                time.sleep(state.delay)
            self.send_json(status, body)

        def do_POST(self) -> None:  # noqa: N802 - http.server names them
            body = self.read_json()
            state.requests.append(body)
            if self.path != "/v1/rerank":
                self._answer(404, {"detail": "Not Found"})
            elif state.behaviour is Behaviour.ERROR_500:
                self._answer(500, {"detail": "boom"})
            else:
                self._answer(200, {"results": state.scores(list(body["documents"]))})

    with serving(Handler, "rerank") as root:
        state.url = f"{root}/v1"
        yield state
