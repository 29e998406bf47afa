"""The event envelope and document payloads: strict, camelCase on the wire; deliveries checked before use."""

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_UPSERTED, DocumentDeleted, DocumentUpserted
from cortex_contracts.envelope import Envelope, new_envelope
from cortex_messaging.delivery import PoisonMessage, parse_delivery

ORG = uuid.UUID("0b9f1d8e-6d0a-4a57-9f5e-2f4f4f2d0a11")
DOC = uuid.UUID("5a1c3f00-1f2e-4c1d-8d55-7e0f3b9a2c22")


def payload(**changes: Any) -> dict[str, Any]:
    return {"documentId": str(DOC), "organizationId": str(ORG), "title": "Pricing", "version": 1, **changes}


def envelope(**data_changes: Any) -> Envelope:
    return new_envelope(
        event_type=TYPE_DOCUMENT_UPSERTED, source="tests", org_id=ORG, subject=str(DOC), data=payload(**data_changes)
    )


def test_a_wire_payload_in_camel_case_is_accepted() -> None:
    doc = DocumentUpserted.model_validate(
        payload(body="text", docClass="spec", workId=str(uuid.uuid4()), updatedAt="2024-05-01T10:00:00Z")
    )

    assert doc.document_id == DOC
    assert doc.organization_id == ORG
    assert doc.doc_class == "spec"
    assert doc.body == "text"


def test_a_wire_payload_in_snake_case_is_refused_with_the_camel_case_name() -> None:
    """Python code constructs payloads by their snake_case names; the wire knows only camelCase."""
    snake = {"document_id": str(DOC), "organization_id": str(ORG), "title": "Pricing", "version": 1}
    with pytest.raises(ValidationError) as refused:
        DocumentUpserted.from_wire(snake)
    assert {error["loc"][0] for error in refused.value.errors() if error["type"] == "missing"} == {
        "documentId",
        "organizationId",
    }
    assert DocumentUpserted.from_wire(payload()).document_id == DOC


def test_payloads_serialise_camel_case_and_omit_unset_optionals() -> None:
    doc = DocumentUpserted(
        document_id=DOC, organization_id=ORG, title="T", body_ref={"bucket": "b", "name": "n"}, version=3
    )

    wire = json.loads(doc.to_wire())

    assert wire["documentId"] == str(DOC)
    assert wire["organizationId"] == str(ORG)
    assert wire["bodyRef"] == {"bucket": "b", "name": "n"}
    assert "document_id" not in wire
    assert "body_ref" not in wire
    assert "body" not in wire
    assert "workId" not in wire
    assert DocumentUpserted.model_validate(wire) == doc


@pytest.mark.parametrize("model", [DocumentUpserted, DocumentDeleted])
def test_payloads_reject_unknown_fields(model: type[DocumentUpserted] | type[DocumentDeleted]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate(payload(sneaky=True))


def test_envelope_rejects_unknown_attributes() -> None:
    wire = json.loads(envelope().to_wire())
    wire["unexpected"] = "x"

    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Envelope.model_validate(wire)


def test_envelope_round_trips_through_the_wire() -> None:
    event = envelope()

    assert Envelope.model_validate_json(event.to_wire()) == event
    assert "tenantid" not in json.loads(event.to_wire())  # unset optionals are left out


def test_body_and_body_ref_together_are_rejected() -> None:
    with pytest.raises(ValidationError, match="either body or bodyRef"):
        DocumentUpserted.model_validate(payload(body="inline", bodyRef={"bucket": "b", "name": "n"}))


def test_a_negative_version_is_rejected() -> None:
    with pytest.raises(ValidationError, match="version"):
        DocumentUpserted.model_validate(payload(version=-1))
    with pytest.raises(ValidationError, match="version"):
        DocumentDeleted.model_validate({"documentId": str(DOC), "organizationId": str(ORG), "version": -1})


def test_a_missing_title_is_rejected() -> None:
    data = payload()
    del data["title"]

    with pytest.raises(ValidationError, match="title"):
        DocumentUpserted.model_validate(data)


def test_parse_delivery_splits_the_subject_and_keeps_the_event() -> None:
    event = envelope()

    delivery = parse_delivery(subjects.kb_document_upserted(ORG), event.to_wire(), deliveries=2)

    assert delivery.event == event
    assert delivery.action == subjects.DOCUMENT_UPSERTED
    assert delivery.deliveries == 2


@pytest.mark.parametrize("raw", [b"{not json", b"\xff\xfe", b"[]", b'{"id": "x"}'])
def test_parse_delivery_rejects_what_is_not_an_envelope(raw: bytes) -> None:
    with pytest.raises(PoisonMessage, match="invalid event envelope"):
        parse_delivery(subjects.kb_document_upserted(ORG), raw, deliveries=1)


@pytest.mark.parametrize("repeated", ["orgid", "orgi\\u0064", "data.organizationId", "data.title"])
def test_parse_delivery_rejects_an_event_that_repeats_a_key(repeated: str) -> None:
    wire = envelope().to_wire().decode()
    if repeated.startswith("orgi"):  # the first would name another organization, the last (kept) this one
        raw = wire.replace('{"', f'{{"{repeated}":"{uuid.uuid4()}","', 1)  # also spelt with a JSON escape
    else:
        key = repeated.removeprefix("data.")
        raw = wire.replace('"data":{"', f'"data":{{"{key}":"{uuid.uuid4()}","', 1)

    with pytest.raises(PoisonMessage, match="repeats"):
        parse_delivery(subjects.kb_document_upserted(ORG), raw.encode(), deliveries=1)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udc00", "\\ud800\\ud800"])
def test_a_lone_surrogate_is_dead_lettered_with_a_reason_that_names_it(escape: str) -> None:
    """QA 41: the reason was only the parser's "unexpected end of hex escape"."""
    wire = envelope().to_wire().decode()
    raw = wire.replace('"data":{"', f'"data":{{"note":"a{escape}b","', 1)

    with pytest.raises(PoisonMessage, match="surrogate pair: alone it is no character"):
        parse_delivery(subjects.kb_document_upserted(ORG), raw.encode(), deliveries=1)


def test_parse_delivery_rejects_a_subject_of_another_organization() -> None:
    other = uuid.uuid4()

    with pytest.raises(PoisonMessage, match="differs from event orgid"):
        parse_delivery(subjects.kb_document_upserted(other), envelope().to_wire(), deliveries=1)


@pytest.mark.parametrize(
    ("time", "refusal"),
    [
        ("0001-01-01T00:00:00Z", "before 1970"),
        ("1969-12-31T23:59:59Z", "before 1970"),
        ("9999-12-31T23:59:59Z", "ahead of this clock"),
        ((datetime.now(UTC) + timedelta(hours=2)).isoformat(), "ahead of this clock"),
    ],
)
def test_parse_delivery_refuses_an_event_time_no_clock_could_give(time: str, refusal: str) -> None:
    """Before: stored as when the entry was remembered (`-infinity`, year 9999), or the document changed."""
    wire = envelope().model_copy(update={"time": datetime.fromisoformat(time)}).to_wire()

    with pytest.raises(PoisonMessage, match=refusal):
        parse_delivery(subjects.kb_document_upserted(ORG), wire, deliveries=1)


def test_parse_delivery_takes_an_event_time_a_little_ahead_or_long_past() -> None:
    for time in (datetime.now(UTC) + timedelta(minutes=30), datetime(1999, 1, 1, tzinfo=UTC)):
        wire = envelope().model_copy(update={"time": time}).to_wire()
        assert parse_delivery(subjects.kb_document_upserted(ORG), wire, deliveries=1).event.time == time


def test_parse_delivery_reads_the_subject_organization_in_any_letter_case() -> None:
    upper = subjects.kb_document_upserted(ORG).replace(str(ORG), str(ORG).upper())

    delivery = parse_delivery(upper, envelope().to_wire(), deliveries=1)

    assert delivery.event.orgid == ORG


@pytest.mark.parametrize("spelling", ["{%s}", "urn:uuid:%s", "%s-"])
def test_parse_delivery_rejects_a_subject_organization_spelt_otherwise(spelling: str) -> None:
    subject = subjects.kb_document_upserted(ORG).replace(str(ORG), spelling % ORG.hex)

    with pytest.raises(PoisonMessage, match="differs from event orgid"):
        parse_delivery(subject, envelope().to_wire(), deliveries=1)


@pytest.mark.parametrize("subject", ["kb", f"kb.{ORG}"])
def test_parse_delivery_rejects_a_subject_without_organization_and_action(subject: str) -> None:
    with pytest.raises(PoisonMessage, match="no organization token"):
        parse_delivery(subject, envelope().to_wire(), deliveries=1)


def test_an_invalid_envelope_is_told_as_where_and_what_without_echoing_the_event() -> None:
    """Before: pydantic's text, each input echoed (here 100 KB), which `cortex dlq list` cut at 160 characters."""
    wire = json.loads(envelope().to_wire()) | {"source": "", "subject": "s" * 100_000}

    with pytest.raises(PoisonMessage) as refused:
        parse_delivery(subjects.kb_document_upserted(ORG), json.dumps(wire).encode(), deliveries=1)

    assert str(refused.value) == (
        "invalid event envelope: source: String should have at least 1 character; "
        "subject: String should have at most 500 characters"
    )
