"""How Cortex lays chunks out in a Qdrant collection: point ids, payloads and filters.

A chunk point's id is derived from (organization, document, version, ordinal), so the points of two
versions of a document never overwrite each other, a retried write of one version lands on the same
points, and one organization's writes can never land on another's points.
Its payload names the organization (every search must-filters on it), the Work (absent for org-wide
documents), the document, the version and `kb_chunks.id`.

A version that has no chunk points leaves a marker point instead, so that an older upsert arriving
later cannot bring back what it replaced: a tombstone for a deletion, an "empty" marker for a version
with no passages. A marker has no `organization_id` key, so no search (they all filter on it) can
ever return one; its owner is kept under `owner`, like every point's.
"""

import uuid
from collections.abc import Iterable

from qdrant_client import models

NAMESPACE = uuid.UUID("9c0f3b1e-5a55-4d8e-9d0a-6f1c2f7f1c00")
VECTOR = "dense"

ORGANIZATION = "organization_id"
WORK = "work_id"
DOCUMENT = "document_id"
VERSION = "version"
CHUNK = "chunk_id"
ORDINAL = "ordinal"
KIND = "kind"
OWNER = "owner"  # the organization, on chunks and tombstones alike: every write is scoped by it
CHUNK_KIND = "chunk"
TOMBSTONE_KIND = "tombstone"  # the document was deleted at this version
EMPTY_KIND = "empty"  # this version of the document has no passages


def chunk_point_id(organization_id: uuid.UUID, document_id: uuid.UUID, version: int, ordinal: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{organization_id}/{document_id}/{version}/{ordinal}"))


def marker_point_id(organization_id: uuid.UUID, document_id: uuid.UUID, version: int, kind: str) -> str:
    """A tombstone's id differs from an empty marker's of the same version: a deletion and an upsert of one
    version, written at once, must not overwrite each other's marker."""
    name = "tombstone" if kind == TOMBSTONE_KIND else "marker"
    return str(uuid.uuid5(NAMESPACE, f"{organization_id}/{document_id}/{version}/{name}"))


def chunk_payload(
    organization_id: uuid.UUID,
    work_id: uuid.UUID | None,
    document_id: uuid.UUID,
    version: int,
    chunk_id: int,
    ordinal: int,
) -> dict[str, object]:
    payload: dict[str, object] = {
        KIND: CHUNK_KIND,
        OWNER: str(organization_id),
        ORGANIZATION: str(organization_id),
        DOCUMENT: str(document_id),
        VERSION: version,
        CHUNK: chunk_id,
        ORDINAL: ordinal,
    }
    if work_id is not None:
        payload[WORK] = str(work_id)
    return payload


def marker_payload(organization_id: uuid.UUID, document_id: uuid.UUID, version: int, kind: str) -> dict[str, object]:
    return {KIND: kind, OWNER: str(organization_id), DOCUMENT: str(document_id), VERSION: version}


def _is(key: str, value: str) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def _version(**bounds: int) -> models.FieldCondition:
    return models.FieldCondition(key=VERSION, range=models.Range(**bounds))


def newer(version: int) -> models.FieldCondition:
    return _version(gt=version)


def of_document(organization_id: uuid.UUID, document_id: uuid.UUID, *more: models.Condition) -> models.Filter:
    """The organization's points of one document (chunks and markers), narrowed by `more`."""
    return models.Filter(must=[_is(OWNER, str(organization_id)), _is(DOCUMENT, str(document_id)), *more])


def supersedes(organization_id: uuid.UUID, document_id: uuid.UUID, version: int) -> models.Filter:
    """What makes a write of `version` stale, an upsert or a deletion: any later version, or a deletion of
    this same version (a deletion wins a tie)."""
    return of_document(
        organization_id,
        document_id,
        models.Filter(
            should=[_version(gt=version), models.Filter(must=[_is(KIND, TOMBSTONE_KIND), _version(gte=version)])]
        ),
    )


def older_than(organization_id: uuid.UUID, document_id: uuid.UUID, version: int) -> models.Filter:
    return of_document(organization_id, document_id, _version(lt=version))


def marker_of_version(organization_id: uuid.UUID, document_id: uuid.UUID, version: int, kind: str) -> models.Filter:
    return of_document(organization_id, document_id, _is(KIND, kind), _version(gte=version, lte=version))


def upserted_at(organization_id: uuid.UUID, document_id: uuid.UUID, version: int) -> models.Filter:
    """What an upsert of `version` wrote: its chunks, or its empty marker."""
    return of_document(
        organization_id,
        document_id,
        models.Filter(must_not=[_is(KIND, TOMBSTONE_KIND)]),
        _version(gte=version, lte=version),
    )


def chunks_of_version(
    organization_id: uuid.UUID, document_id: uuid.UUID, version: int, *, from_ordinal: int = 0
) -> models.Filter:
    conditions: list[models.Condition] = [_is(KIND, CHUNK_KIND), _version(gte=version, lte=version)]
    if from_ordinal > 0:
        conditions.append(models.FieldCondition(key=ORDINAL, range=models.Range(gte=from_ordinal)))
    return of_document(organization_id, document_id, *conditions)


def search_filter(
    organization_id: uuid.UUID,
    work_ids: Iterable[uuid.UUID] | None,
    document_ids: Iterable[uuid.UUID] | None,
) -> models.Filter:
    """The organization always; the Works and documents when given (an empty set matches nothing)."""
    must: list[models.Condition] = [_is(ORGANIZATION, str(organization_id))]
    if work_ids is not None:
        must.append(models.FieldCondition(key=WORK, match=models.MatchAny(any=sorted(map(str, work_ids)))))
    if document_ids is not None:
        must.append(models.FieldCondition(key=DOCUMENT, match=models.MatchAny(any=sorted(map(str, document_ids)))))
    return models.Filter(must=must)
