"""Keep the read copy of the catalog (Works, Missions, Teams, team resources, members) current.

Each change is one versioned upsert: the row changes only when the event's version is higher, so
events arriving out of order or twice converge to the newest state. A deletion is a versioned
tombstone (`deleted_at`), so a late older upsert cannot bring the row back.
"""

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, or_
from sqlalchemy.dialects.postgresql import Insert, insert
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_contracts import catalog as events
from cortex_store.models import Base


@dataclass(frozen=True)
class CatalogTable:
    table: Table
    keys: dict[str, str]  # column -> payload field
    values: dict[str, str]  # column -> payload field
    tombstone: dict[str, Any]  # required columns' values for a deletion that arrives first


TABLES: dict[events.CatalogEntity, CatalogTable] = {
    events.CatalogEntity.WORK: CatalogTable(
        Base.metadata.tables["works"],
        {"id": "work_id"},
        {"title": "title", "mission_id": "mission_id"},
        {"title": ""},
    ),
    events.CatalogEntity.MISSION: CatalogTable(
        Base.metadata.tables["missions"], {"id": "mission_id"}, {"title": "title"}, {"title": ""}
    ),
    events.CatalogEntity.TEAM: CatalogTable(
        Base.metadata.tables["teams"], {"id": "team_id"}, {"name": "name"}, {"name": ""}
    ),
    events.CatalogEntity.TEAM_RESOURCE: CatalogTable(
        Base.metadata.tables["team_resources"],
        {"team_id": "team_id", "resource_type": "resource_type", "resource_id": "resource_id"},
        {},
        {},
    ),
    events.CatalogEntity.MEMBER: CatalogTable(
        Base.metadata.tables["org_members"],
        {"organization_id": "organization_id", "user_id": "user_id"},
        {"role": "role"},
        {"role": "member"},
    ),
}


async def apply_change(
    session: AsyncSession,
    entity: events.CatalogEntity,
    payload: events.CatalogChange,
    organization_id: uuid.UUID,
    *,
    deleted: bool,
) -> bool:
    """Apply one catalog change; False when a newer version is already stored, or this one (a deletion wins a
    tie, as a document's does)."""
    spec = TABLES[entity]
    version: int = payload.version
    now = datetime.now(UTC)
    row: dict[str, Any] = {column: getattr(payload, field) for column, field in spec.keys.items()}
    row |= {"organization_id": organization_id, "version": version}
    if entity is not events.CatalogEntity.MEMBER:
        row["updated_at"] = now
    if deleted:
        row |= {**spec.tombstone, "deleted_at": now}
    else:
        row |= {column: _plain(getattr(payload, field)) for column, field in spec.values.items()}
        row["deleted_at"] = None
    statement = insert(spec.table).values(**row)
    changed = {column: statement.excluded[column] for column in row if column not in {*spec.keys, "organization_id"}}
    if deleted:  # a tombstone keeps the last known title/name/role
        changed = {column: value for column, value in changed.items() if column not in spec.tombstone}
    result = await session.execute(
        statement.on_conflict_do_update(
            index_elements=[spec.table.c[column] for column in spec.keys],
            set_=changed,
            where=_supersedes(spec.table, statement, deleted=deleted),
        ).returning(spec.table.c.version)
    )
    return result.first() is not None


def _supersedes(table: Table, statement: Insert, *, deleted: bool) -> ColumnElement[bool]:
    newer = table.c.version < statement.excluded.version
    if not deleted:
        return newer
    return or_(newer, and_(table.c.version == statement.excluded.version, table.c.deleted_at.is_(None)))


def _plain(value: object) -> object:
    return value.value if isinstance(value, events.MemberRoleName) else value
