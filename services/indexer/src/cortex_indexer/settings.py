"""Indexer settings, from the environment (prefix `CORTEX_INDEXER_`; the URLs also as DATABASE_URL/NATS_URL)."""

from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_telemetry.tracing import TraceExporter


class IndexerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CORTEX_INDEXER_", env_file=".env", extra="ignore", populate_by_name=True
    )

    database_url: str = Field(validation_alias=AliasChoices("CORTEX_INDEXER_DATABASE_URL", "DATABASE_URL"))
    nats_url: str = Field(
        default="nats://127.0.0.1:4222",
        validation_alias=AliasChoices("CORTEX_INDEXER_NATS_URL", "NATS_URL"),
    )
    embedder: Literal["local", "none"] = Field(default="local", description="`none` indexes lexical-only.")
    max_deliver: int = Field(default=5, ge=1, description="Attempts before an event goes to the DLQ.")
    concurrency: int = Field(default=16, ge=1, description="Events handled at once by one copy.")
    log_level: str = "INFO"
    trace_exporter: TraceExporter = Field(
        default=TraceExporter.NONE,
        validation_alias=AliasChoices("CORTEX_INDEXER_TRACE_EXPORTER", "CORTEX_TRACE_EXPORTER"),
    )
    otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CORTEX_INDEXER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    )
