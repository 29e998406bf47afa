"""`cortex run` refuses configurations its separate service processes cannot share."""

from cortex_cli.supervisor import LOCAL_QDRANT_REFUSED, refusal


def test_local_qdrant_is_refused_because_only_one_process_may_open_it() -> None:
    assert refusal({"CORTEX_PLUGIN_VECTOR_STORE": "qdrant"}) == LOCAL_QDRANT_REFUSED


def test_a_qdrant_server_or_pgvector_runs() -> None:
    assert refusal({"CORTEX_PLUGIN_VECTOR_STORE": "qdrant", "CORTEX_QDRANT_URL": "http://qdrant:6333"}) is None
    assert refusal({"CORTEX_PLUGIN_VECTOR_STORE": "pgvector"}) is None
    assert refusal({}) is None
