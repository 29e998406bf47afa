"""The selection cascade as a pure function: env pin → org choice → default → first loaded, rung by rung."""

from cortex_contracts.plugins import SelectionReason
from cortex_plugins import Candidate, select

INSTALLED = [Candidate("qdrant"), Candidate("pgvector"), Candidate("milvus")]
BROKEN = Candidate("broken", loaded=False, error="import failed: ModuleNotFoundError: No module named 'x'")


def test_the_env_pin_wins_over_everything() -> None:
    chosen = select("vector_store", INSTALLED, pin="milvus", org_choice="qdrant", default="pgvector")
    assert (chosen.name, chosen.reason, chosen.notes) == ("milvus", SelectionReason.ENV, ())


def test_the_org_choice_wins_over_the_default() -> None:
    chosen = select("vector_store", INSTALLED, org_choice="qdrant", default="pgvector")
    assert (chosen.name, chosen.reason, chosen.notes) == ("qdrant", SelectionReason.ORG, ())


def test_the_default_when_nothing_is_pinned_or_chosen() -> None:
    chosen = select("vector_store", INSTALLED, default="pgvector")
    assert (chosen.name, chosen.reason) == ("pgvector", SelectionReason.DEFAULT)


def test_the_first_loaded_by_name_when_there_is_no_default() -> None:
    chosen = select("reranker", [Candidate("zeta"), Candidate("alpha", loaded=False, error="x"), Candidate("beta")])
    assert (chosen.name, chosen.reason) == ("beta", SelectionReason.FIRST)


def test_an_unknown_env_pin_is_an_error_not_a_silent_fallback() -> None:
    chosen = select("vector_store", INSTALLED, pin="qdrnt", pin_source="CORTEX_PLUGIN_VECTOR_STORE", default="pgvector")
    assert chosen.name is None
    assert chosen.reason is SelectionReason.NONE
    assert chosen.detail == (
        "CORTEX_PLUGIN_VECTOR_STORE=qdrnt: vector_store plugin 'qdrnt' is not installed "
        "(installed: milvus, pgvector, qdrant)"
    )


def test_a_pinned_plugin_that_failed_to_load_is_an_error_with_its_load_error() -> None:
    chosen = select("vector_store", [*INSTALLED, BROKEN], pin="broken", default="pgvector")
    assert chosen.name is None
    assert chosen.detail is not None
    assert "'broken' failed to load: import failed: ModuleNotFoundError" in chosen.detail


def test_an_org_choice_that_is_gone_falls_through_to_the_default_with_a_note() -> None:
    chosen = select("vector_store", INSTALLED, org_choice="weaviate", default="pgvector")
    assert (chosen.name, chosen.reason) == ("pgvector", SelectionReason.DEFAULT)
    assert chosen.notes == (
        "the organization's choice 'weaviate' is not installed (installed: milvus, pgvector, qdrant)",
    )


def test_a_broken_org_choice_and_a_broken_default_fall_through_to_the_first_loaded() -> None:
    broken_default = Candidate("pgvector", loaded=False, error="factory raised")
    chosen = select(
        "vector_store", [BROKEN, broken_default, Candidate("qdrant")], org_choice="broken", default="pgvector"
    )
    assert (chosen.name, chosen.reason) == ("qdrant", SelectionReason.FIRST)
    assert len(chosen.notes) == 2
    assert chosen.notes[0].startswith("the organization's choice 'broken' failed to load")
    assert chosen.notes[1] == "the default 'pgvector' failed to load: factory raised"


def test_nothing_loaded_or_nothing_installed_selects_nothing_and_says_so() -> None:
    none_loaded = select("vector_store", [BROKEN], default="pgvector")
    assert none_loaded.name is None
    assert none_loaded.reason is SelectionReason.NONE
    assert none_loaded.notes[-1] == "no vector_store plugin loaded"
    nothing = select("reranker", [])
    assert (nothing.name, nothing.detail) == (None, "no reranker plugin is installed")


def test_an_empty_pin_or_choice_is_no_pin_or_choice() -> None:
    chosen = select("vector_store", INSTALLED, pin="", org_choice="", default="pgvector")
    assert (chosen.name, chosen.reason) == ("pgvector", SelectionReason.DEFAULT)
