"""What configures the OpenAI-compatible embedder: `CORTEX_EMBEDDER_OPENAI_*`, checked as they are read, so
that a value the embedder cannot take stops a service at start with one line naming the variable."""

from pydantic import Field, SecretStr, ValidationError
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.settings_values import HttpUrl
from cortex_embedding.errors import EmbedderNotConfigured, EmbedderSettingsInvalid


class OpenAIEmbedderSettings(BaseSettings):
    model_config = SettingsConfigDict(
        allow_inf_nan=False, env_prefix="CORTEX_EMBEDDER_OPENAI_", env_file=".env", extra="ignore"
    )

    base_url: HttpUrl = Field(description="The API root, e.g. `http://localhost:11434/v1` (`/embeddings` is appended).")
    model: str = Field(description="The model name sent with each request and recorded with the index.")
    api_key: SecretStr | None = Field(default=None, description="Sent as `Authorization: Bearer …` when set.")
    dimension: int | None = Field(
        default=None, ge=1, description="Vector length; when unset, discovered by the first call."
    )
    send_dimensions: bool = Field(
        default=False,
        description="Also send `dimensions` (OpenAI text-embedding-3 shortening); needs `dimension`.",
    )
    timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="The longest a request takes, its whole answer read and its retries and their waits included.",
    )
    max_retries: int = Field(
        default=4, ge=0, description="Retries after the first attempt of each request, while its deadline allows."
    )
    backoff_initial_seconds: float = Field(default=0.5, ge=0)
    backoff_max_seconds: float = Field(default=30.0, ge=0, description="Also caps a server's `Retry-After`.")
    max_batch: int = Field(default=64, ge=1, description="Inputs per request.")
    fail_fast_seconds: float = Field(
        default=10.0,
        ge=0,
        description="After a request failed, calls fail at once for this long (documents are indexed"
        " lexical-only, searches answer lexically); 0: every call tries the endpoint.",
    )


def _variable(error: ErrorDetails) -> str:
    return f"CORTEX_EMBEDDER_OPENAI_{str(error['loc'][0]).upper()}"


def settings_from_environment() -> OpenAIEmbedderSettings:
    """`CORTEX_EMBEDDER_OPENAI_*`, or an error that names the variables missing or not valid."""
    try:
        return OpenAIEmbedderSettings()  # filled from the environment
    except ValidationError as exc:
        missing = sorted({_variable(e) for e in exc.errors() if e["type"] == "missing"})
        invalid = sorted({f"{_variable(e)} ({e['msg']})" for e in exc.errors() if e["type"] != "missing"})
        if invalid:
            raise EmbedderSettingsInvalid(f"the OpenAI-compatible embedder: not valid: {', '.join(invalid)}") from exc
        raise EmbedderNotConfigured(f"the OpenAI-compatible embedder needs {', '.join(missing)}") from exc
