"""Gateway settings, from the environment (prefix `CORTEX_GATEWAY_`)."""

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.settings_values import DatabaseUrl, HttpUrl, ListenHost, Port, Secret
from cortex_telemetry.logs import LogLevel
from cortex_telemetry.tracing import TraceExporter


class GatewaySettings(BaseSettings):
    model_config = SettingsConfigDict(
        allow_inf_nan=False, env_prefix="CORTEX_GATEWAY_", env_file=".env", extra="ignore", populate_by_name=True
    )

    database_url: DatabaseUrl = Field(validation_alias=AliasChoices("CORTEX_GATEWAY_DATABASE_URL", "DATABASE_URL"))
    nats_url: str = Field(
        default="nats://127.0.0.1:4222",
        validation_alias=AliasChoices("CORTEX_GATEWAY_NATS_URL", "NATS_URL"),
    )
    secret: Secret = Field(
        validation_alias=AliasChoices("CORTEX_GATEWAY_SECRET", "CORTEX_SECRET"),
        description="HS256 key that bearer tokens are signed with (the CLI signs with the same).",
    )
    jwks_url: HttpUrl | None = Field(default=None, description="JWKS URL: RS256 tokens are verified against it.")
    jwt_issuer: str | None = Field(default=None, description="Required `iss` of RS256 tokens.")
    jwt_audience: str | None = Field(default=None, description="Required `aud` of RS256 tokens.")
    max_body_bytes: int = Field(default=4 * 1024 * 1024, gt=0, description="Larger request bodies get 413.")
    rate_limit_per_minute: int = Field(default=600, ge=1, description="Requests per token per minute (per copy).")
    rate_limit_burst: int = Field(default=60, ge=1, description="Requests a token may make at once.")
    host: ListenHost = "127.0.0.1"
    port: Port = 8080
    rpc_timeout_seconds: float = Field(default=5.0, gt=0, description="How long to wait for the aggregator.")
    # Past the openai embedder's 30 s for a call: a note embedded while the endpoint hangs is indexed
    # lexical-only once that time is up, and still answered 201 (QA 47: at 30 s it was always a 504).
    wait_timeout_seconds: float = Field(default=40.0, gt=0, description="Longest `?wait=true` for indexing.")
    log_level: LogLevel = LogLevel.INFO
    trace_exporter: TraceExporter = Field(
        default=TraceExporter.NONE,
        validation_alias=AliasChoices("CORTEX_GATEWAY_TRACE_EXPORTER", "CORTEX_TRACE_EXPORTER"),
    )
    otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CORTEX_GATEWAY_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    )

    @model_validator(mode="after")
    def _jwks_needs_issuer_and_audience(self) -> "GatewaySettings":
        if self.jwks_url and not (self.jwt_issuer and self.jwt_audience):
            raise ValueError("CORTEX_GATEWAY_JWKS_URL needs CORTEX_GATEWAY_JWT_ISSUER and CORTEX_GATEWAY_JWT_AUDIENCE")
        return self
