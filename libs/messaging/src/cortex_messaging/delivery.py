"""One received event, parsed and checked before any handler sees it."""

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from cortex_contracts.envelope import Envelope
from cortex_contracts.subjects import split_org_subject


class PoisonMessage(Exception):
    """The message can never be handled (malformed, unknown, contradictory): dead-letter it at once."""


@dataclass(frozen=True)
class RecordedFailure:
    """A handler's outcome when it handled a message by recording that its subject failed (say, a file
    that cannot be read): the message is acked — retrying cannot help — and a copy goes to the DLQ with
    this reason and error, so a failure is never only in the database."""

    reason: str
    error: str


@dataclass(frozen=True)
class Delivery:
    subject: str
    action: str  # the subject after the org token, e.g. "document.upserted"
    event: Envelope
    deliveries: int
    final: bool = False  # the consumer's last delivery: what fails now is dead-lettered, not tried again


class _DuplicateKey(ValueError):
    pass


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        raise _DuplicateKey(f"a JSON object repeats {', '.join(map(repr, repeated[:5]))}")
    return dict(pairs)


def _refuse_duplicate_keys(payload: bytes) -> None:
    """JSON parsers disagree on `{"orgid": A, "orgid": B}` (ours keeps the last, others the first): an
    event that says two things is refused, rather than read one way here and another way elsewhere. A
    second parse (~8 µs for a 1 KB event; escapes such as `"orgi\u0064"` decoded first, so they count)."""
    try:
        json.loads(payload, object_pairs_hook=_object_without_duplicates)
    except _DuplicateKey as exc:
        raise PoisonMessage(f"invalid event envelope: {exc}") from exc


def parse_delivery(subject: str, payload: bytes, deliveries: int, *, final: bool = False) -> Delivery:
    try:
        event = Envelope.model_validate_json(payload)
    except ValidationError as exc:
        raise PoisonMessage(f"invalid event envelope: {exc}") from exc
    _refuse_duplicate_keys(payload)  # valid JSON here: only a repeated key can fail
    try:
        domain, org_token, action = split_org_subject(subject)
    except ValueError as exc:
        raise PoisonMessage(f"subject {subject!r} has no organization token") from exc
    if org_token != str(event.orgid):
        raise PoisonMessage(f"subject organization {org_token!r} differs from event orgid {event.orgid}")
    if event.type != f"{domain}.{action}":  # `kb.<orgId>.document.upserted` carries `kb.document.upserted`
        raise PoisonMessage(f"event type {event.type!r} does not match its subject {subject!r}")
    return Delivery(subject=subject, action=action, event=event, deliveries=deliveries, final=final)


Handler = Callable[[Delivery], Awaitable[RecordedFailure | None]]
