"""`cortex run` refuses configurations its separate service processes cannot share."""

from cortex_cli.supervisor import LOCAL_QDRANT_REFUSED, refusal


def test_local_qdrant_is_refused_because_only_one_process_may_open_it() -> None:
    assert refusal({"CORTEX_PLUGIN_VECTOR_STORE": "qdrant"}) == LOCAL_QDRANT_REFUSED
    # Spaced as the services still read it (QA 32: ran, and every search but a lexical one was a 502).
    for spaced in ("qdrant ", " qdrant", "\tqdrant\n"):
        assert refusal({"CORTEX_PLUGIN_VECTOR_STORE": spaced}) == LOCAL_QDRANT_REFUSED
        assert refusal({"CORTEX_PLUGIN_VECTOR_STORE": spaced, "CORTEX_QDRANT_URL": "  "}) == LOCAL_QDRANT_REFUSED


def test_a_qdrant_server_or_pgvector_runs() -> None:
    assert refusal({"CORTEX_PLUGIN_VECTOR_STORE": "qdrant", "CORTEX_QDRANT_URL": "http://qdrant:6333"}) is None
    assert refusal({"CORTEX_PLUGIN_VECTOR_STORE": "pgvector"}) is None
    assert refusal({}) is None


def test_a_pin_is_checked_against_the_installed_plugins_names_as_the_services_read_it() -> None:
    upper_case = refusal({"CORTEX_PLUGIN_VECTOR_STORE": "QDRANT"})
    assert upper_case == (
        "CORTEX_PLUGIN_VECTOR_STORE=QDRANT: vector_store plugin 'QDRANT' is not installed (installed: pgvector, qdrant)"
    )
    # Variable names in any case, values stripped, as pydantic-settings reads them in the services.
    assert refusal({"cortex_plugin_reranker": " nope "}) == (
        "CORTEX_PLUGIN_RERANKER=nope: reranker plugin 'nope' is not installed (installed: http, none)"
    )
    assert refusal({"cortex_plugin_vector_store": " qdrant"}) == LOCAL_QDRANT_REFUSED
    assert "CORTEX_PLUGIN_RERANKR names no plugin category" in (refusal({"CORTEX_PLUGIN_RERANKR": "http"}) or "")
    assert refusal({"CORTEX_PLUGIN_EXTRACTOR": "anything"}) is None  # ignored: every extractor is used
    assert refusal({"CORTEX_PLUGIN_RERANKER": "http", "CORTEX_PLUGIN_EMBEDDER": ""}) is None
