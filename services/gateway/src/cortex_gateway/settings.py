"""Gateway settings, from the environment (prefix `CORTEX_GATEWAY_`)."""

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_telemetry.tracing import TraceExporter


class GatewaySettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CORTEX_GATEWAY_", env_file=".env", extra="ignore", populate_by_name=True
    )

    database_url: str = Field(validation_alias=AliasChoices("CORTEX_GATEWAY_DATABASE_URL", "DATABASE_URL"))
    nats_url: str = Field(
        default="nats://127.0.0.1:4222",
        validation_alias=AliasChoices("CORTEX_GATEWAY_NATS_URL", "NATS_URL"),
    )
    secret: SecretStr = Field(
        validation_alias=AliasChoices("CORTEX_GATEWAY_SECRET", "CORTEX_SECRET"),
        description="HS256 key that bearer tokens are signed with (the CLI signs with the same).",
    )
    host: str = "127.0.0.1"
    port: int = 8080
    rpc_timeout_seconds: float = Field(default=5.0, gt=0, description="How long to wait for the aggregator.")
    wait_timeout_seconds: float = Field(default=30.0, gt=0, description="Longest `?wait=true` for indexing.")
    log_level: str = "INFO"
    trace_exporter: TraceExporter = Field(
        default=TraceExporter.NONE,
        validation_alias=AliasChoices("CORTEX_GATEWAY_TRACE_EXPORTER", "CORTEX_TRACE_EXPORTER"),
    )
    otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CORTEX_GATEWAY_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    )
