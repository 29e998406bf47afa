"""`CORTEX_EMBEDDER_OPENAI_BASE_URL` must be an http(s) URL, so that a wrong one stops a service at start (exit 2,
one line naming the variable) rather than every document being indexed lexical-only (QA 34, B6)."""

import pytest

from cortex_embedding import openai_compatible
from cortex_embedding.errors import EmbedderSettingsInvalid


@pytest.mark.parametrize("base_url", ["127.0.0.1:18435/v1", "localhost:18435/v1", "", " ", "ftp://host/v1"])
def test_a_base_url_that_is_not_http_stops_start_up_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, base_url: str
) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_MODEL", "env-model")
    with pytest.raises(EmbedderSettingsInvalid, match=r"CORTEX_EMBEDDER_OPENAI_BASE_URL \(.*http:// or https://"):
        openai_compatible.settings_from_environment()


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:18435/v1", "HTTPS://api.openai.com/v1/"])
def test_an_http_base_url_is_taken(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_MODEL", "env-model")
    assert openai_compatible.settings_from_environment().base_url == base_url
