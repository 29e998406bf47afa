"""Indexer settings, from the environment (prefix `CORTEX_INDEXER_`; the URLs also as DATABASE_URL/NATS_URL)."""

from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.settings_values import INT32_MAX, DatabaseUrl
from cortex_store.ann_graph import EXACT_SCAN_MAX_CHUNKS
from cortex_telemetry.logs import LogLevel
from cortex_telemetry.tracing import TraceExporter


class IndexerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        allow_inf_nan=False, env_prefix="CORTEX_INDEXER_", env_file=".env", extra="ignore", populate_by_name=True
    )

    database_url: DatabaseUrl = Field(validation_alias=AliasChoices("CORTEX_INDEXER_DATABASE_URL", "DATABASE_URL"))
    nats_url: str = Field(
        default="nats://127.0.0.1:4222",
        validation_alias=AliasChoices("CORTEX_INDEXER_NATS_URL", "NATS_URL"),
    )
    embedder: Literal["local", "openai", "none"] = Field(
        default="local",
        description="`local` (all-MiniLM-L6-v2), `openai` (any OpenAI-compatible endpoint, configured by "
        "CORTEX_EMBEDDER_OPENAI_*), or `none` (lexical-only).",
    )
    backfill_interval_seconds: float = Field(
        default=10.0, gt=0, description="Pause between passes of the embedding backfill when it is idle."
    )
    backfill_batch: int = Field(
        default=64, ge=1, le=100_000, description="Passages (and entries) per org per backfill pass."
    )
    backfill_refused_retry_seconds: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="A text the embedder refused alone stays lexical-only and is tried again after this long, then "
        "after twice as long each time it is refused again, up to an hour.",
    )
    ann_min_chunks: int = Field(
        default=EXACT_SCAN_MAX_CHUNKS,
        ge=0,
        le=INT32_MAX,
        description="An organization with more embedded passages than this enters the HNSW graph (below, the "
        "aggregator scans exactly: keep it at the aggregator's CORTEX_AGGREGATOR_EXACT_SCAN_MAX_CHUNKS).",
    )
    ann_admission_interval_seconds: float = Field(
        default=30.0, gt=0, description="Pause between passes that admit organizations to the HNSW graph."
    )
    embedding_threads: int | None = Field(
        default=None,
        ge=1,
        description="torch intra-op threads for the local model (default: torch's, one per core).",
    )
    embedding_streams: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description=(
            "Model calls at once, each in its own thread (see cortex_embedding.batcher). Default: for the local "
            "model, one per core, each single-threaded unless embedding_threads says otherwise (bench/ingest: 2 "
            "single-threaded calls embed ~15% faster than one call on 2 threads); for an endpoint, one."
        ),
    )
    embedding_max_batch: int = Field(
        default=32,
        ge=1,
        le=4096,
        description=(
            "Passages a model call takes at most. Smaller calls keep every stream busy to the end of a burst "
            "(bench/ingest, 2 streams: 64 gave 0.77 of the bare model's rate where 256 gave 0.72, which left one "
            "core idle through the last long call). Since the local model slices by length (slicing.py), calls "
            "of 32 passages embed as fast as one call of all 750 of bench/ingest's (21.9 and 23.6 CPU-s)."
        ),
    )
    extraction_workers: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Files read at once, each in a worker process of its own (extraction_workers.py).",
    )
    extraction_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Longest a file may take to read; beyond it the file fails as too slow (its worker is killed).",
    )
    max_deliver: int = Field(default=5, ge=1, description="Attempts before an event goes to the DLQ.")
    concurrency: int = Field(
        default=192,
        ge=1,
        description=(
            "Events handled at once by one copy. The embedder batches the passages of every handler waiting for it, "
            "so this bounds the model's calls (bench/ingest, 300 docs): 16 gave calls of ~19 texts padded to ~2× "
            "their tokens and 0.44 of the bare model's rate; 64 gave ~68 texts, ×1.87, 0.40; 192 gave ~149 texts, "
            "×1.31, 0.64; 400 no better. Handlers hold a database connection only around short transactions."
        ),
    )
    database_connections: int = Field(
        default=4,
        ge=1,
        le=64,
        description=(
            "Database connections of one copy (at most `concurrency`). Handlers hold one only around a short call "
            "(~10 ms a document), so a few keep up with the model; each more is a server process whose caches and "
            "plans warm separately (bench/ingest --mix: PostgreSQL spent 1.7–2.0 CPU-s with 16, 1.0–1.2 with 4)."
        ),
    )
    log_level: LogLevel = LogLevel.INFO
    trace_exporter: TraceExporter = Field(
        default=TraceExporter.NONE,
        validation_alias=AliasChoices("CORTEX_INDEXER_TRACE_EXPORTER", "CORTEX_TRACE_EXPORTER"),
    )
    otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CORTEX_INDEXER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    )
