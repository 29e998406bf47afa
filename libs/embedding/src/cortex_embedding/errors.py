"""What can go wrong when embedding, as types a caller can tell apart."""

from cortex_contracts.plugins import PluginNotConfigured, PluginSettingsInvalid


class EmbeddingError(Exception):
    """An embedder could not turn the texts into vectors. Callers index lexical-only and backfill later."""


class EmbedderUnavailable(EmbeddingError):
    """The embedder did not answer usefully after its retries: unreachable, timing out, rate-limited or
    failing server-side (HTTP 429/5xx). Transient: the same request may well succeed later."""


class EmbeddingRejected(EmbeddingError):
    """The endpoint refused the request (HTTP 4xx other than 408/429): a wrong model name, API key or
    input. Not retried; it will not succeed until the configuration changes."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(f"embedding request rejected with HTTP {status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail


class InvalidEmbeddingResponse(EmbeddingError):
    """The endpoint answered 200 with something that is not one vector per input of the expected size."""


class EmbedderNotInstalled(EmbeddingError):
    """The embedder's optional packages (e.g. the `local` extra) are not installed."""


class EmbedderNotConfigured(EmbeddingError, PluginNotConfigured):
    """Settings the embedder cannot do without are not given."""


class EmbedderSettingsInvalid(EmbeddingError, PluginSettingsInvalid):
    """A setting of the embedder is given but not valid."""
