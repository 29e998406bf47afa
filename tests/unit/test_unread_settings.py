"""A variable with a service's prefix that no setting reads is named, with the setting it was likely meant for."""

import pytest

from cortex_aggregator.settings import AggregatorSettings
from cortex_gateway.settings import GatewaySettings
from cortex_indexer.settings import IndexerSettings
from cortex_supervision.service_run import settings_or_exit, unread_variables


def test_a_misspelt_or_shortened_name_is_unread_and_the_intended_one_suggested() -> None:
    environ = {
        "CORTEX_INDEXER_CONCURENCY": "3",  # one letter short
        "CORTEX_INDEXER_LEXICAL": "1",  # like nothing
        "CORTEX_INDEXER_CONCURRENCY": "3",
        "CORTEX_INDEXER_DATABASE_URL": "postgresql://x/y",  # an alias is read
        "CORTEX_INDEXER_EMBEDDER": "local",
        "CORTEX_GATEWAY_BURST": "5",  # another service's prefix: not the indexer's business
    }
    assert unread_variables(IndexerSettings, environ) == [
        ("CORTEX_INDEXER_CONCURENCY", "CORTEX_INDEXER_CONCURRENCY"),
        ("CORTEX_INDEXER_LEXICAL", None),
    ]
    # The README's `_BURST` for `CORTEX_GATEWAY_RATE_LIMIT_BURST`: the one name that ends so.
    assert unread_variables(GatewaySettings, environ) == [("CORTEX_GATEWAY_BURST", "CORTEX_GATEWAY_RATE_LIMIT_BURST")]


def test_a_variable_read_elsewhere_is_not_named() -> None:
    environ = {"CORTEX_AGGREGATOR_COPIES": "2", "CORTEX_AGGREGATOR_EXACT_SCAN_MAX_CHUNKS": "10"}
    assert unread_variables(AggregatorSettings, environ) == [("CORTEX_AGGREGATOR_COPIES", None)]
    assert unread_variables(AggregatorSettings, environ, frozenset({"CORTEX_AGGREGATOR_COPIES"})) == []


def test_the_service_says_so_at_start(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CORTEX_INDEXER_DATABASE_URL", "postgresql://cortex@localhost/cortex")
    monkeypatch.setenv("CORTEX_INDEXER_CONCURENCY", "3")
    settings = settings_or_exit(IndexerSettings, "cortex-indexer")
    assert settings.concurrency == IndexerSettings.model_fields["concurrency"].default  # ignored, as pydantic does
    assert capsys.readouterr().err == (
        "cortex-indexer: CORTEX_INDEXER_CONCURENCY is no setting of cortex-indexer; it is ignored "
        "(did you mean CORTEX_INDEXER_CONCURRENCY?)\n"
    )
