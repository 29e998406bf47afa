"""Aggregator settings, from the environment (prefix `CORTEX_AGGREGATOR_`)."""

from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.settings_values import INT32_MAX, DatabaseUrl, Secret
from cortex_store.ann_graph import EXACT_SCAN_MAX_CHUNKS
from cortex_telemetry.logs import LogLevel
from cortex_telemetry.tracing import TraceExporter


class AggregatorSettings(BaseSettings):
    model_config = SettingsConfigDict(
        allow_inf_nan=False, env_prefix="CORTEX_AGGREGATOR_", env_file=".env", extra="ignore", populate_by_name=True
    )

    database_url: DatabaseUrl = Field(validation_alias=AliasChoices("CORTEX_AGGREGATOR_DATABASE_URL", "DATABASE_URL"))
    nats_url: str = Field(
        default="nats://127.0.0.1:4222",
        validation_alias=AliasChoices("CORTEX_AGGREGATOR_NATS_URL", "NATS_URL"),
    )
    secret: Secret = Field(
        validation_alias=AliasChoices("CORTEX_AGGREGATOR_SECRET", "CORTEX_SECRET"),
        description="Signs page cursors so a forged or altered one is refused.",
    )
    embedder: Literal["local", "openai", "none"] = Field(
        default="local",
        description="Query embedder: `local`, `openai` (CORTEX_EMBEDDER_OPENAI_*, as the indexer) or `none` "
        "(lexical-only). Dense search runs only while its model is the one the index records.",
    )
    query_embedding_timeout_seconds: float = Field(
        default=2.0, gt=0, description="`openai`: one try per query, this long, then lexical-only."
    )
    embedding_space_refresh_seconds: float = Field(
        default=5.0,
        gt=0,
        description="How often the recorded embedding model is re-read (and a failed query embedder is left alone).",
    )
    embedding_threads: int = Field(default=1, ge=1, description="torch threads for query embedding.")
    query_model_int8: bool = Field(
        default=True,
        description="`local`: embed queries with the model's int8 copy (cortex_embedding/onnx_int8.py), ~2x "
        "faster, its vectors within cosine 0.97 of the fp32 model's; false: fp32.",
    )
    rrf_k: int = Field(default=60, ge=1, description="Reciprocal-rank-fusion constant.")
    lexical_weight: float = Field(default=1.0, ge=0)
    dense_weight: float = Field(default=1.0, ge=0)
    dense_min_similarity: float = Field(
        default=0.3,
        ge=-1,
        le=1,
        description="A passage the dense leg finds counts only at this cosine similarity or more (model-dependent; "
        "-1: every one). For all-MiniLM-L6-v2, words no document is about reach ~0.2-0.28, real queries' top ten 0.3+.",
    )
    recall_lexical_share: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="Recall: relevance = share x BM25/max BM25 + (1 - share) x cosine (a convex score fusion).",
    )
    rerank_candidates: int = Field(
        default=20,
        ge=1,
        le=200,
        description="With a reranker other than `none`: how many of a search's best fused documents it reorders.",
    )
    rerank_timeout_seconds: float = Field(
        default=1.0, gt=0, description="A search waits this long for the reranker, then keeps the fused order."
    )
    exact_scan_max_chunks: int = Field(
        default=EXACT_SCAN_MAX_CHUNKS,
        ge=0,
        le=INT32_MAX,
        description="Up to this many embedded candidate chunks, the dense leg scans exactly; above, it walks "
        "HNSW first (measured by bench/search at 10k chunks: exact scan 8 ms of PostgreSQL CPU, walk ~2 ms).",
    )
    facet_index_max_organizations: int = Field(
        default=16,
        ge=1,
        description="Organizations whose facet index (feed without q, facets) is kept in memory, least recently "
        "used dropped; about 20 MB per 100k documents.",
    )
    lexical_index_max_organizations: int = Field(
        default=16,
        ge=0,
        description="Organizations whose BM25 postings are kept in memory for searches without filters, least "
        "recently used dropped; about 8 bytes per posting (32 MB of arrays for 100k one-passage documents). 0: BM25 "
        "always in SQL (filtered searches, and an organization's first searches while its index loads, are).",
    )
    lexical_index_max_megabytes: int = Field(
        default=1024,
        ge=1,
        description="The most memory the in-memory BM25 indexes may hold together, least recently used dropped "
        "(the organization being searched is always kept).",
    )
    pool_size: int = Field(
        default=8,
        ge=1,
        description=(
            "Database connections of one copy: up to this many for searches (asyncpg's pool: org_reads), and this "
            "many plus as many again under load for everything else (SQLAlchemy's pool)."
        ),
    )
    log_level: LogLevel = LogLevel.INFO
    trace_exporter: TraceExporter = Field(
        default=TraceExporter.NONE,
        validation_alias=AliasChoices("CORTEX_AGGREGATOR_TRACE_EXPORTER", "CORTEX_TRACE_EXPORTER"),
    )
    otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CORTEX_AGGREGATOR_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    )
