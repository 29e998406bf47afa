"""Wrong values in the environment are refused when a service reads its settings (one line, exit 2), not
met later as a traceback loop, a silent wrap-around or an answer with no score (QA 28)."""

import pytest
from pydantic import ValidationError
from pydantic_settings import BaseSettings

from cortex_aggregator.settings import AggregatorSettings
from cortex_embedding.openai_settings import OpenAIEmbedderSettings
from cortex_gateway.settings import GatewaySettings
from cortex_indexer.settings import IndexerSettings
from cortex_memory_plugins.mem0 import Mem0Settings
from cortex_plugins.builtins.http_reranker import HttpRerankerSettings
from cortex_vector_stores.settings import PgVectorSettings, QdrantSettings

BASE = {"DATABASE_URL": "postgresql://cortex@127.0.0.1/cortex", "CORTEX_SECRET": "s3cret-" + "x" * 32}


@pytest.mark.parametrize(
    ("settings", "variable", "value", "why"),
    [
        (GatewaySettings, "CORTEX_GATEWAY_PORT", "70000", "less than or equal to 65535"),  # before: port 4464
        (GatewaySettings, "CORTEX_GATEWAY_PORT", "0", "greater than or equal to 1"),
        (GatewaySettings, "CORTEX_GATEWAY_HOST", "", "must not be empty"),  # before: every interface (QA 38)
        (GatewaySettings, "CORTEX_GATEWAY_HOST", " ", "must not be empty"),
        (GatewaySettings, "CORTEX_GATEWAY_RPC_TIMEOUT_SECONDS", "inf", "finite number"),
        (GatewaySettings, "CORTEX_GATEWAY_JWKS_URL", "idp.example.com/jwks.json", "http:// or https:// URL"),
        (GatewaySettings, "CORTEX_SECRET", "", "must not be empty"),  # before: every HS256 token refused
        (GatewaySettings, "DATABASE_URL", "127.0.0.1:5432/cortex", "must be a PostgreSQL URL"),
        (IndexerSettings, "DATABASE_URL", "cortex", "must be a PostgreSQL URL"),
        (IndexerSettings, "DATABASE_URL", "postgresql://db/cortex?connect_timeout=ten", "connect_timeout=ten is not"),
        (IndexerSettings, "CORTEX_INDEXER_ANN_MIN_CHUNKS", "99999999999999999999", "less than or equal to"),
        (IndexerSettings, "CORTEX_INDEXER_BACKFILL_BATCH", "99999999999999999999", "less than or equal to"),
        (AggregatorSettings, "CORTEX_AGGREGATOR_LEXICAL_WEIGHT", "inf", "finite number"),  # before: score null
        (AggregatorSettings, "CORTEX_AGGREGATOR_EXACT_SCAN_MAX_CHUNKS", "99999999999999999999", "less than or"),
        (AggregatorSettings, "CORTEX_SECRET", "", "must not be empty"),
        (AggregatorSettings, "CORTEX_SECRET", " \t", "must not be empty"),  # before: refused by the CLI only
        # Before, any key signed tokens: a short one can be guessed, a template's is known to all who read it.
        (GatewaySettings, "CORTEX_SECRET", "s3cret", "at least 32 bytes"),
        (AggregatorSettings, "CORTEX_SECRET", "x" * 31, "at least 32 bytes"),
        (GatewaySettings, "CORTEX_SECRET", "CHANGE-ME-run-openssl-rand-base64-48", "a template's placeholder"),
        (GatewaySettings, "CORTEX_SECRET", "cortex-dev-secret-change-me-0123456789abcdef", "a template's placeholder"),
        (PgVectorSettings, "CORTEX_PGVECTOR_EXACT_SCAN_MAX_CHUNKS", "3000000000", "less than or equal to"),
        (HttpRerankerSettings, "CORTEX_RERANKER_BASE_URL", "localhost:7997/v1", "http:// or https:// URL"),
        (Mem0Settings, "CORTEX_MEM0_URL", "mem0.internal:8000", "http:// or https:// URL"),
        (QdrantSettings, "CORTEX_QDRANT_URL", "  ", "http:// or https:// URL"),  # before: a server named "  "
        (QdrantSettings, "CORTEX_QDRANT_URL", "qdrant:6333", "http:// or https:// URL"),
        (Mem0Settings, "CORTEX_MEM0_TIMEOUT_SECONDS", "nan", "finite number"),
    ],
)
def test_a_wrong_value_is_refused_where_it_is_read(
    monkeypatch: pytest.MonkeyPatch, settings: type[BaseSettings], variable: str, value: str, why: str
) -> None:
    for name, default in BASE.items():
        monkeypatch.setenv(name, default)
    monkeypatch.setenv(variable, value)

    with pytest.raises(ValidationError, match=why):
        settings()


def test_the_usual_values_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**BASE, "DATABASE_URL": "postgresql+asyncpg://u:p%40ss@db:5432/cortex"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CORTEX_GATEWAY_JWKS_URL", "https://idp.example.com/.well-known/jwks.json")
    monkeypatch.setenv("CORTEX_GATEWAY_JWT_ISSUER", "https://idp.example.com")
    monkeypatch.setenv("CORTEX_GATEWAY_JWT_AUDIENCE", "cortex")
    assert GatewaySettings().port == 8080
    assert IndexerSettings().database_url.startswith("postgresql+asyncpg://")
    monkeypatch.setenv("CORTEX_MEM0_URL", "http://mem0:8000")
    assert Mem0Settings().url == "http://mem0:8000"


def test_a_wait_outlasts_an_embedding_endpoints_whole_call() -> None:
    """QA 47: both were 30 s, so a note sent with ?wait=true while the endpoint hung was a 504, though it was
    indexed (lexical-only) a moment later."""
    wait = GatewaySettings.model_fields["wait_timeout_seconds"].default
    assert wait > OpenAIEmbedderSettings.model_fields["timeout_seconds"].default
