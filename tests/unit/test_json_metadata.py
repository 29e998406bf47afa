"""Agent-memory metadata is refused unless jsonb can store it exactly as sent."""

import json
from typing import Any

import pytest
from pydantic import ValidationError

from cortex_contracts.json_metadata import MAX_METADATA_DEPTH, checked_metadata
from cortex_contracts.memory import EntryRemembered


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_ordinary_metadata_passes_unchanged() -> None:
    metadata = {"source": "run-7", "scores": [1, 2.5, None], "tags": {"x": True}, "note": "ünïcode"}

    assert checked_metadata(metadata) == metadata


def test_nesting_is_counted_through_objects_and_arrays() -> None:
    assert checked_metadata(nested(MAX_METADATA_DEPTH)) == nested(MAX_METADATA_DEPTH)
    with pytest.raises(ValueError, match="deeper than 32 levels"):
        checked_metadata({"list": [[{"deep": nested(MAX_METADATA_DEPTH - 2)}]]})


def test_a_nesting_past_the_recursion_limit_is_refused_not_crashed() -> None:
    with pytest.raises(ValueError, match="deeper"):
        checked_metadata(nested(5000))


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_numbers_json_has_no_name_for_are_refused(number: float) -> None:
    with pytest.raises(ValueError, match="NaN or an infinite number"):
        checked_metadata({"score": [number]})


@pytest.mark.parametrize("metadata", [{"a": "x\u0000y"}, {"k\u0000": 1}])
def test_nul_characters_are_refused_in_keys_and_values(metadata: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="NUL"):
        checked_metadata(metadata)


@pytest.mark.parametrize("text", ["\\u0000", "C:\\\\u0000", "\\\\\\u0000"])
def test_the_text_of_a_nul_escape_is_not_a_nul(text: str) -> None:
    # Before: found as `\u0000` in the encoded JSON, where an escaped backslash precedes "u0000".
    assert checked_metadata({"path": text, text: 1}) == {"path": text, text: 1}


@pytest.mark.parametrize("text", ["\\\u0000", "\\\\\u0000"])
def test_a_nul_after_backslashes_is_still_refused(text: str) -> None:
    with pytest.raises(ValueError, match="NUL"):
        checked_metadata({"a": text})


def test_more_than_16_kib_is_refused() -> None:
    with pytest.raises(ValueError, match="16 KiB"):
        checked_metadata({"text": "x" * 16 * 1024})


def test_the_event_contract_refuses_what_json_cannot_carry() -> None:
    """The indexer reads events with pydantic's JSON parser, which takes NaN: the contract refuses it."""
    entry = {
        "organizationId": "7a1f0c3d-9e2b-4f7a-8c5d-3b4e2a1f0d9c",
        "content": "remembered",
        "partition": "episodic",
        "tier": "org",
    }
    EntryRemembered.model_validate_json(json.dumps(entry | {"metadata": {"n": 1}}))

    with pytest.raises(ValidationError, match="NaN"):
        EntryRemembered.model_validate_json(json.dumps(entry)[:-1] + ', "metadata": {"n": NaN}}')


def test_the_size_is_that_of_compact_json() -> None:
    """QA 36: 7,000 zeros in an array, 14 KB as sent, were measured as 21 KB (with `", "` between them)."""
    zeros = {"a": [0] * 7000}
    assert len(json.dumps(zeros, separators=(",", ":"))) < 16 * 1024
    assert checked_metadata(zeros) == zeros
    with pytest.raises(ValueError, match="16 KiB"):
        checked_metadata({"a": [0] * 8200})
