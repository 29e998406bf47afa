"""Fixtures of the unit tests: a scripted OpenAI-compatible endpoint (`scripted`), and embedders pointed at it
(`make_embedder`, each closed after its test)."""

from collections.abc import Callable, Iterator

import pytest

from cortex_embedding.openai_compatible import OpenAICompatibleEmbedder, OpenAIEmbedderSettings
from tests.scripted_endpoint import ScriptedEndpoint

MakeEmbedder = Callable[..., OpenAICompatibleEmbedder]


@pytest.fixture
def scripted() -> Iterator[ScriptedEndpoint]:
    running = ScriptedEndpoint().start()
    yield running
    running.stop()


@pytest.fixture
def make_embedder(scripted: ScriptedEndpoint) -> Iterator[MakeEmbedder]:
    made: list[OpenAICompatibleEmbedder] = []

    def make(**overrides: object) -> OpenAICompatibleEmbedder:
        settings = {
            "base_url": scripted.base_url,
            "model": "scripted",
            "timeout_seconds": 2.0,
            "max_retries": 3,
            "backoff_initial_seconds": 0.01,
            "backoff_max_seconds": 30.0,
            **overrides,
        }
        made.append(OpenAICompatibleEmbedder(OpenAIEmbedderSettings.model_validate(settings)))
        return made[-1]

    yield make
    for each in made:
        each.close()
