"""JSON objects that repeat a key: parsers disagree on `{"a": 1, "a": 2}` (Python keeps the last, others the
first), so a message that says two things is refused rather than read one way here and another elsewhere."""

import json
from typing import Any


class _Repeated(ValueError):
    def __init__(self, keys: list[str]) -> None:
        super().__init__(keys)
        self.keys = keys


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Repeated(sorted({key for key in keys if keys.count(key) > 1}))
    return dict(pairs)


def repeated_keys(payload: bytes | str) -> list[str]:
    """The keys the first JSON object that repeats one repeats, sorted; [] when none does, or when `payload`
    is not JSON (that is its parser's to say). Escapes such as `"\\u0061"` are decoded first, so they count."""
    try:
        json.loads(payload, object_pairs_hook=_object)
    except _Repeated as repeated:
        return repeated.keys
    except (ValueError, RecursionError):
        return []
    return []


def describe(keys: list[str]) -> str:
    return f"a JSON object repeats {', '.join(map(repr, keys[:5]))}"
