"""Hypothesis: in whatever order, and however often, a document's versions arrive, the highest one wins.

Each example takes a fresh document and draws 1 to 6 distinct versions, each an upsert, a delete or both
(upstream deleting a document at the version it has: the deletion wins the tie), and sends each event one
to three times. A copy is either the same event again (same event id under another
`Nats-Msg-Id`: a redelivery, or a replay after JetStream's dedup window) or the same version sent again
by upstream (a new event id, same content). All of them go, in a drawn order, through NATS to the
session's in-process indexer, which handles up to 16 at once — so versions of one document also race.

Once every message is settled (the indexer's consumer span for it has ended without a retry pending),
PostgreSQL must hold the highest version: its title and body and exactly the chunks the chunker makes
of them, or — when the highest version is deleted — a tombstone at that version with no chunks. No
message may end in the dead-letter stream.
"""

import secrets
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from nats.js import JetStreamContext
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, StatusCode, TraceFlags
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts import subjects
from cortex_contracts.envelope import Envelope
from cortex_indexer.bootstrap import CONSUMER
from cortex_indexer.chunking import chunk_document
from cortex_messaging.publisher import publish_event
from cortex_messaging.trace_headers import inject
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import org_transaction
from tests.conftest import Org
from tests.events import delete_event, upsert_event
from tests.infrastructure import Infrastructure
from tests.org_clients import close_org, create_org
from tests.services import RunningServices
from tests.spans import wait_for_spans

pytestmark = pytest.mark.e2e

Kind = Literal["upsert", "delete"]
Copy = Literal["original", "same event", "resent"]
KINDS: tuple[Kind, ...] = ("upsert", "delete")
COPIES: tuple[Copy, ...] = ("same event", "resent")  # of an original

Db = async_sessionmaker[AsyncSession]


@dataclass(frozen=True)
class Send:
    version: int
    kind: Kind
    copy: Copy


@st.composite
def histories(draw: st.DrawFn) -> list[Send]:
    """A document's sends, in arrival order: every drawn event once as the original, plus 0-2 copies."""
    kinds = draw(
        st.dictionaries(st.integers(1, 40), st.sampled_from([*((k,) for k in KINDS), KINDS]), min_size=1, max_size=6),
        label="kinds of each version",
    )
    sends = []
    for version, of_version in kinds.items():
        for kind in of_version:
            sends.append(Send(version, kind, "original"))
            copies = draw(st.lists(st.sampled_from(COPIES), max_size=2), label=f"copies of v{version} {kind}")
            sends += [Send(version, kind, copy) for copy in copies]
    return draw(st.permutations(sends), label="arrival order")


def title_of(document: uuid.UUID, version: int) -> str:
    return f"Plan {document.hex[:8]} v{version}"


def body_of(document: uuid.UUID, version: int) -> str:
    """Two sections, so a document has more than one chunk; every word names the version."""
    marker = f"doc{document.hex[:8]}v{version}"
    return f"# Goals\n\nVersion {version}: {marker} goals.\n\n# Risks\n\nVersion {version}: {marker} risks."


def event_for(org_id: uuid.UUID, document: uuid.UUID, send: Send) -> Envelope:
    if send.kind == "delete":
        return delete_event(org_id, document, version=send.version)
    return upsert_event(
        org_id,
        document,
        title=title_of(document, send.version),
        body=body_of(document, send.version),
        version=send.version,
    )


async def publish(js: JetStreamContext, org_id: uuid.UUID, document: uuid.UUID, history: list[Send]) -> None:
    """Every send reaches the stream: a same-event copy goes under a fresh `Nats-Msg-Id`."""
    originals = {
        (send.version, send.kind): event_for(org_id, document, send) for send in history if send.copy == "original"
    }
    for send in history:
        subject = (subjects.kb_document_deleted if send.kind == "delete" else subjects.kb_document_upserted)(org_id)
        if send.copy == "same event":
            headers = inject({"Nats-Msg-Id": f"copy-{uuid.uuid4()}"})
            ack = await js.publish(subject, originals[send.version, send.kind].to_wire(), headers=headers)
        else:
            event = originals[send.version, send.kind] if send.copy == "original" else event_for(org_id, document, send)
            ack = await publish_event(js, subject, event)
        assert not ack.duplicate, send


@contextmanager
def fresh_trace() -> Iterator[int]:
    """Run the block in a new trace; yields its id, which everything sent inside carries.

    Not `tests.spans.new_trace`: the SDK draws trace ids from `random`, which Hypothesis reseeds for
    every example, so every example would get the same trace id and see the spans of the ones before.
    """
    trace_id, span_id = secrets.randbits(128) or 1, secrets.randbits(64) or 1
    root = SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with trace.use_span(NonRecordingSpan(root)):
        yield trace_id


def settled_by_indexer(trace_id: int) -> Any:
    """A delivery the indexer's KB consumer settled for good: acked, or dead-lettered as poison (an error
    without a recorded exception). An error with an exception is retried, so a later span follows."""

    def match(span: ReadableSpan) -> bool:
        assert span.context is not None
        return (
            span.context.trace_id == trace_id
            and span.kind is SpanKind.CONSUMER
            and (span.attributes or {}).get("messaging.consumer.group.name") == CONSUMER
            and (span.status.status_code is not StatusCode.ERROR or not any(e.name == "exception" for e in span.events))
        )

    return match


@pytest.fixture(scope="module")
async def permutations_org(services: RunningServices, migrated: Infrastructure) -> AsyncIterator[Org]:
    org = await create_org(migrated.database_url, services.base_url, services.secret, prefix="versions")
    yield org
    await close_org(org)


@pytest.fixture(scope="module")
async def db(migrated: Infrastructure) -> AsyncIterator[Db]:
    """The owner's connection; each read binds the organization, as row-level security wants."""
    engine = make_engine(migrated.database_url, pool_size=2)
    yield make_sessionmaker(engine)
    await engine.dispose()


async def stored(db: Db, org_id: uuid.UUID, document: uuid.UUID) -> tuple[Any, list[tuple[int, str, str]]]:
    async with org_transaction(db, org_id) as session:
        row = (
            await session.execute(
                text("SELECT version, title, body, deleted_at FROM kb_documents WHERE id = :id"), {"id": document}
            )
        ).one_or_none()
        chunks = await session.execute(
            text("SELECT ordinal, heading, text FROM kb_chunks WHERE document_id = :id ORDER BY ordinal, id"),
            {"id": document},
        )
        return row, [(c.ordinal, c.heading, c.text) for c in chunks]


# No shrinking: each example costs a few seconds of indexing, and the failing example Hypothesis prints
# is already small (at most 18 sends).
@settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate],
)
@given(history=histories())
async def test_the_highest_version_wins_whatever_the_order_and_duplicates(
    history: list[Send], permutations_org: Org, js: JetStreamContext, spans: InMemorySpanExporter, db: Db
) -> None:
    org_id, document = permutations_org.id, uuid.uuid4()
    with fresh_trace() as trace_id:
        await publish(js, org_id, document, history)
    settled = await wait_for_spans(spans, settled_by_indexer(trace_id), count=len(history), timeout=45)

    winner = max(history, key=lambda send: (send.version, send.kind == "delete"))  # a deletion wins a tie
    row, chunks = await stored(db, org_id, document)
    assert row is not None
    assert row.version == winner.version
    if winner.kind == "delete":
        assert row.deleted_at is not None
        assert row.body == ""
        assert chunks == []
    else:
        title, body = title_of(document, winner.version), body_of(document, winner.version)
        assert (row.title, row.body, row.deleted_at) == (title, body, None)
        assert chunks == [(c.ordinal, c.heading, c.text) for c in chunk_document(title, body)]
    dead_lettered = [span.status.description for span in settled if span.status.status_code is StatusCode.ERROR]
    assert dead_lettered == []
