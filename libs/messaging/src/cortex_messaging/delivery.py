"""One received event, parsed and checked before any handler sees it."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from pydantic import ValidationError

from cortex_contracts.envelope import Envelope
from cortex_contracts.json_keys import describe, repeated_keys
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


def brief(error: ValidationError) -> str:
    """Each of the errors as `where: what`, without the input pydantic would echo (at times a whole body): a
    dead letter's reason, read in `cortex dlq list` one line each."""
    parts = []
    for each in error.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in each["loc"])
        what = _explained(each["msg"].removeprefix("Value error, "))
        parts.append(f"{where}: {what}" if where else what)
    return "; ".join(parts)


def _explained(message: str) -> str:
    """The JSON parser's words for a lone surrogate (`\\ud800` not followed by its pair: "unexpected end of
    hex escape", "lone leading surrogate in hex escape") say what it saw, not what was wrong (QA 41)."""
    if "hex escape" in message:
        return f"{message} (a \\uD800-\\uDFFF escape must be half of a surrogate pair: alone it is no character)"
    return message


def _refuse_duplicate_keys(payload: bytes) -> None:
    """An event that repeats a key says two things (cortex_contracts.json_keys). A second parse (~8 µs for a
    1 KB event)."""
    if keys := repeated_keys(payload):
        raise PoisonMessage(f"invalid event envelope: {describe(keys)}")


def _names(org_token: str, org_id: UUID) -> bool:
    """Whether the subject's token is the organization's id: a UUID is read in any letter case (RFC 9562 §4),
    as an upstream may write it."""
    try:
        return UUID(org_token) == org_id and len(org_token) == len(str(org_id))
    except ValueError:
        return False


# The earliest moment an event, a document or an entry may claim: year 1 was stored as -infinity.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
# Publishers' clocks run a little apart; further ahead is a wrong clock or a made-up time, which would be
# stored as when a document changed or an entry was remembered (and order uploads without a version).
CLOCK_SKEW = timedelta(hours=1)


def as_utc(moment: datetime) -> datetime:
    """A moment without a zone is UTC, as PostgreSQL reads it."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _check_time(moment: datetime) -> None:
    aware = as_utc(moment)
    if aware < EARLIEST:
        raise PoisonMessage(f"event time {moment.isoformat()} is before {EARLIEST.isoformat()}")
    if aware - datetime.now(UTC) > CLOCK_SKEW:
        raise PoisonMessage(f"event time {moment.isoformat()} is ahead of this clock by more than {CLOCK_SKEW}")


def parse_delivery(subject: str, payload: bytes, deliveries: int, *, final: bool = False) -> Delivery:
    try:
        event = Envelope.model_validate_json(payload)
    except ValidationError as exc:
        raise PoisonMessage(f"invalid event envelope: {brief(exc)}") from exc
    _refuse_duplicate_keys(payload)  # valid JSON here: only a repeated key can fail
    _check_time(event.time)
    try:
        domain, org_token, action = split_org_subject(subject)
    except ValueError as exc:
        raise PoisonMessage(f"subject {subject!r} has no organization token") from exc
    if not _names(org_token, event.orgid):
        raise PoisonMessage(f"subject organization {org_token!r} differs from event orgid {event.orgid}")
    if event.type != f"{domain}.{action}":  # `kb.<orgId>.document.upserted` carries `kb.document.upserted`
        raise PoisonMessage(f"event type {event.type!r} does not match its subject {subject!r}")
    return Delivery(subject=subject, action=action, event=event, deliveries=deliveries, final=final)


Handler = Callable[[Delivery], Awaitable[RecordedFailure | None]]
