"""The `http` reranker's health is whether its endpoint reranks. Before: it had none, so a plugin listing
said `ok` while every search logged "reranker http failed" (QA 32)."""

from cortex_embedded_servers import free_port
from cortex_plugins.builtins.http_reranker import HttpReranker, HttpRerankerSettings
from cortex_plugins.listing import check_health
from tests.rerank_server import Behaviour, serving_reranker


async def health_at(url: str) -> str | None:
    reranker = HttpReranker(HttpRerankerSettings(base_url=url))
    try:
        return await check_health(reranker)
    finally:
        await reranker.aclose()


async def test_an_endpoint_that_reranks_is_healthy() -> None:
    with serving_reranker() as server:
        assert await health_at(server.url) is None
        assert len(server.requests) == 1


async def test_an_endpoint_that_fails_or_is_not_there_is_unhealthy_with_the_reason() -> None:
    with serving_reranker() as server:
        server.behaviour = Behaviour.ERROR_500
        failing = await health_at(server.url)
    nobody = await health_at(f"http://127.0.0.1:{free_port('127.0.0.1')}/v1")

    assert failing is not None and "answered 500" in failing
    assert nobody is not None and "unreachable" in nobody
