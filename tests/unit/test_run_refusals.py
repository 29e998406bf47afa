"""`cortex run` refuses configurations its separate service processes cannot share."""

from cortex_cli.supervisor import LOCAL_QDRANT_REFUSED, refusal
from cortex_embedded_servers import free_port


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


def test_where_the_gateway_cannot_listen_is_said_before_anything_starts() -> None:
    """QA 38: port 70000 was a traceback, and a host that does not resolve "a port in use"."""
    port = str(free_port("127.0.0.1"))
    for host, why in [("no-such-host.invalid", "Name or service not known"), ("192.0.2.1", "Cannot assign requested")]:
        refused = refusal({"CORTEX_GATEWAY_HOST": host, "CORTEX_GATEWAY_PORT": port}) or ""
        assert refused.startswith(f"cannot listen on {host}:{port} (CORTEX_GATEWAY_HOST, CORTEX_GATEWAY_PORT): ")
        assert why in refused
    # Not a port, or no host: left to the gateway's settings check, which refuses them in one line.
    for unusable in ({"CORTEX_GATEWAY_PORT": "70000"}, {"CORTEX_GATEWAY_PORT": "0"}, {"CORTEX_GATEWAY_HOST": " "}):
        assert refusal({"CORTEX_GATEWAY_PORT": port, **unusable}) is None
