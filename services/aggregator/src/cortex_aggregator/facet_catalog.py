"""One organization's catalog as the facets read it: live Works (title, Mission), Missions, Teams, and
which Teams own which Works (team_resources of type `work`).

Small (hundreds of rows), so it is held whole and reloaded whole when any of it changes.
"""

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Catalog:
    works: dict[uuid.UUID, tuple[str, uuid.UUID | None]] = field(default_factory=dict)  # id -> (title, Mission)
    missions: dict[uuid.UUID, str] = field(default_factory=dict)  # id -> title
    teams: dict[uuid.UUID, str] = field(default_factory=dict)  # id -> name
    owners: tuple[tuple[uuid.UUID, uuid.UUID], ...] = ()  # (Work id, Team id), live team_resources

    @property
    def has_missions(self) -> bool:
        """The Mission facet is shown when some live Work has a Mission."""
        return any(mission is not None for _, mission in self.works.values())

    @property
    def has_teams(self) -> bool:
        return bool(self.teams)

    def label(self, facet: str, value: uuid.UUID) -> str | None:
        if facet == "work":
            work = self.works.get(value)
            return work[0] if work else None
        if facet == "mission":
            return self.missions.get(value)
        if facet == "team":
            return self.teams.get(value)
        return None

    def works_in_missions(self, missions: Iterable[uuid.UUID]) -> set[uuid.UUID]:
        """The Mission filter: live Works whose Mission is one of these (live or not)."""
        wanted = set(missions)
        return {work for work, (_, mission) in self.works.items() if mission in wanted}

    def works_of_teams(self, teams: Iterable[uuid.UUID]) -> set[uuid.UUID]:
        """The Team filter: Works a live team_resources row gives one of these Teams (live or not)."""
        wanted = set(teams)
        return {work for work, team in self.owners if team in wanted}


# Every live row the catalog holds, one statement: kind, id, name, and the Mission (works) or Team (owners).
CATALOG_SQL = """
SELECT 'work' AS kind, id, title AS name, mission_id AS other FROM works
WHERE organization_id = $1 AND deleted_at IS NULL
UNION ALL
SELECT 'mission', id, title, NULL::uuid FROM missions WHERE organization_id = $1 AND deleted_at IS NULL
UNION ALL
SELECT 'team', id, name, NULL::uuid FROM teams WHERE organization_id = $1 AND deleted_at IS NULL
UNION ALL
SELECT 'owner', resource_id, NULL, team_id FROM team_resources
WHERE organization_id = $1 AND resource_type = 'work' AND deleted_at IS NULL
"""


def catalog_from_rows(rows: Iterable[Any]) -> Catalog:
    catalog = Catalog()
    owners: list[tuple[uuid.UUID, uuid.UUID]] = []
    for row in rows:
        kind, key, name, other = row["kind"], row["id"], row["name"], row["other"]
        if kind == "work":
            catalog.works[key] = (name, other)
        elif kind == "mission":
            catalog.missions[key] = name
        elif kind == "team":
            catalog.teams[key] = name
        else:
            owners.append((key, other))
    return Catalog(catalog.works, catalog.missions, catalog.teams, tuple(owners))
