"""Catalog events: Cortex keeps a read copy of Works, Missions, Teams, team resources and members.

Upstream services own these; subjects are `catalog.<orgId>.<entity>.upserted|deleted`, versioned like
documents (the highest version wins, a deletion included, and a deletion wins a tie).
"""

from enum import StrEnum
from uuid import UUID

from pydantic import Field, StrictInt

from cortex_contracts.base import BIGINT_MAX, WireModel

TYPE_PREFIX = "catalog"


class CatalogEntity(StrEnum):
    WORK = "work"
    MISSION = "mission"
    TEAM = "team"
    TEAM_RESOURCE = "team_resource"
    MEMBER = "member"


class MemberRoleName(StrEnum):
    MEMBER = "member"
    ADMIN = "admin"


class CatalogChange(WireModel):
    """What every catalog change carries."""

    organization_id: UUID = Field(description="Owning organization; must match the envelope's orgid.")
    version: StrictInt = Field(
        ge=0, le=BIGINT_MAX, description="The highest version wins, a deletion included; a deletion wins a tie."
    )


class WorkUpserted(CatalogChange):
    work_id: UUID = Field(description="The Work.")
    title: str = Field(min_length=1, max_length=300, description="Work title.")
    mission_id: UUID | None = Field(default=None, description="Mission the Work serves, if any.")


class WorkDeleted(CatalogChange):
    work_id: UUID


class MissionUpserted(CatalogChange):
    mission_id: UUID = Field(description="The Mission.")
    title: str = Field(min_length=1, max_length=300, description="Mission title.")


class MissionDeleted(CatalogChange):
    mission_id: UUID


class TeamUpserted(CatalogChange):
    team_id: UUID = Field(description="The Team.")
    name: str = Field(min_length=1, max_length=200, description="Team name.")


class TeamDeleted(CatalogChange):
    team_id: UUID


class TeamResourceUpserted(CatalogChange):
    """A Team owns a resource (for now: a Work)."""

    team_id: UUID
    resource_type: str = Field(default="work", pattern=r"^[a-z_]{1,32}$", description="Kind of resource.")
    resource_id: UUID


class TeamResourceDeleted(CatalogChange):
    team_id: UUID
    resource_type: str = Field(default="work", pattern=r"^[a-z_]{1,32}$")
    resource_id: UUID


class MemberUpserted(CatalogChange):
    user_id: str = Field(min_length=1, max_length=200, description="The user.")
    role: MemberRoleName = Field(description="member reads, admin also writes.")


class MemberDeleted(CatalogChange):
    user_id: str = Field(min_length=1, max_length=200)


UPSERTED: dict[CatalogEntity, type[CatalogChange]] = {
    CatalogEntity.WORK: WorkUpserted,
    CatalogEntity.MISSION: MissionUpserted,
    CatalogEntity.TEAM: TeamUpserted,
    CatalogEntity.TEAM_RESOURCE: TeamResourceUpserted,
    CatalogEntity.MEMBER: MemberUpserted,
}
DELETED: dict[CatalogEntity, type[CatalogChange]] = {
    CatalogEntity.WORK: WorkDeleted,
    CatalogEntity.MISSION: MissionDeleted,
    CatalogEntity.TEAM: TeamDeleted,
    CatalogEntity.TEAM_RESOURCE: TeamResourceDeleted,
    CatalogEntity.MEMBER: MemberDeleted,
}


def catalog_subject(org_id: UUID, entity: CatalogEntity, action: str) -> str:
    return f"catalog.{org_id}.{entity.value}.{action}"


def catalog_type(entity: CatalogEntity, action: str) -> str:
    return f"{TYPE_PREFIX}.{entity.value}.{action}"
