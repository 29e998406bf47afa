"""Organizations and memberships, as the CLI creates them for standalone use.

Every write runs bound to its organization, so it also works where row-level security applies to
the connecting role.
"""

import re
import uuid

from sqlalchemy import exists, select
from sqlalchemy.dialects.postgresql import insert

from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.models import MemberRole, Organization, OrgMember, Work
from cortex_store.tenancy import bind_organization


class UnknownOrganization(LookupError):
    pass


class InvalidSlug(ValueError):
    pass


# The gateway reads X-Scope-Slug as HTTP reads header bytes (latin-1): a slug outside ASCII could be
# created here and never named there.
SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


async def ensure_membership(
    database_url: str,
    slug: str,
    user_id: str,
    role: MemberRole,
    *,
    create: bool,
    wanted_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """The organization's id; with `create`, make the organization and membership (or update the role).

    `wanted_id`: the id the organization has upstream, which its events name (new ones get a random id)."""
    engine = make_engine(database_url, pool_size=1)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            org_id = await session.scalar(select(Organization.id).where(Organization.slug == slug))
            if org_id is None and create:
                if SLUG.fullmatch(slug) is None:
                    raise InvalidSlug(f"{slug!r} cannot be a slug: ASCII letters, digits, '.', '_' and '-' only")
                new_id = wanted_id or uuid.uuid4()
                await bind_organization(session, new_id)
                await session.execute(
                    insert(Organization).values(id=new_id, slug=slug, name=slug).on_conflict_do_nothing()
                )
                org_id = await session.scalar(select(Organization.id).where(Organization.slug == slug))
                if org_id is None:
                    raise UnknownOrganization(f"organization id {new_id} belongs to another slug")
            if org_id is None:
                raise UnknownOrganization(f"no organization {slug!r} (use --create)")
            if wanted_id is not None and org_id != wanted_id:
                raise UnknownOrganization(f"organization {slug!r} has the id {org_id}, not {wanted_id}")
            await bind_organization(session, org_id)
            if create:
                statement = insert(OrgMember).values(organization_id=org_id, user_id=user_id, role=role)
                await session.execute(
                    statement.on_conflict_do_update(
                        index_elements=["organization_id", "user_id"], set_={"role": role, "deleted_at": None}
                    )
                )
                return org_id
            member = await session.scalar(
                select(OrgMember.role).where(
                    OrgMember.organization_id == org_id, OrgMember.user_id == user_id, OrgMember.deleted_at.is_(None)
                )
            )
            if member is None:
                raise UnknownOrganization(f"{user_id!r} is not a member of {slug!r} (use --create)")
            return org_id
    finally:
        await engine.dispose()


async def current_role(database_url: str, slug: str, user_id: str) -> MemberRole | None:
    """The user's role in the organization; None when either does not exist (yet)."""
    engine = make_engine(database_url, pool_size=1)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            org_id = await session.scalar(select(Organization.id).where(Organization.slug == slug))
            if org_id is None:
                return None
            await bind_organization(session, org_id)
            role: MemberRole | None = await session.scalar(
                select(OrgMember.role).where(
                    OrgMember.organization_id == org_id, OrgMember.user_id == user_id, OrgMember.deleted_at.is_(None)
                )
            )
            return role
    finally:
        await engine.dispose()


async def organization_id(database_url: str, slug: str) -> uuid.UUID:
    engine = make_engine(database_url, pool_size=1)
    try:
        async with make_sessionmaker(engine)() as session:
            org_id = await session.scalar(select(Organization.id).where(Organization.slug == slug))
    finally:
        await engine.dispose()
    if org_id is None:
        raise UnknownOrganization(f"no organization {slug!r} (create it with `cortex token --create`)")
    return org_id


async def organization_ids(database_url: str) -> set[uuid.UUID]:
    """Every organization's id."""
    engine = make_engine(database_url, pool_size=1)
    try:
        async with make_sessionmaker(engine)() as session:
            return set(await session.scalars(select(Organization.id)))
    finally:
        await engine.dispose()


async def work_in_catalog(database_url: str, organization_id: uuid.UUID, work_id: uuid.UUID) -> bool:
    """Whether the organization's catalog holds this Work (and it is not deleted)."""
    engine = make_engine(database_url, pool_size=1)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            await bind_organization(session, organization_id)
            live = exists().where(
                Work.id == work_id, Work.organization_id == organization_id, Work.deleted_at.is_(None)
            )
            return bool(await session.scalar(select(live)))
    finally:
        await engine.dispose()
