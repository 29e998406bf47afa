"""Who is calling, for which organization, with what role.

The organization comes only from the `X-Scope-Slug` header; membership (or the API key) is looked up
on every request under that organization's row-level security, so a revoked member or key loses
access at once. A caller who is not a member gets 404, exactly like one naming an organization that
does not exist.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select

from cortex_gateway.credentials import API_KEY_PREFIX, parse_api_key, unauthorized
from cortex_gateway.problems import Problem
from cortex_gateway.resources import Resources
from cortex_store.models import ApiKey, MemberRole, Organization, OrgMember
from cortex_store.tenancy import bind_organization

bearer = HTTPBearer(auto_error=False, description="A JWT, or an API key (`cxk_...`).")


@dataclass(frozen=True)
class Caller:
    principal: str  # user id, or `apikey:<id>`
    organization_id: uuid.UUID
    tenant_id: str | None
    role: MemberRole


def resources(request: Request) -> Resources:
    found: Resources = request.app.state.resources
    return found


NOT_FOUND = "No such organization."


async def _organization(res: Resources, slug: str) -> tuple[uuid.UUID, str | None]:
    async with res.sessions() as session:
        row = (
            await session.execute(select(Organization.id, Organization.tenant_id).where(Organization.slug == slug))
        ).first()
    if row is None:
        raise Problem(404, NOT_FOUND)
    return row.id, row.tenant_id


async def _member_role(res: Resources, org_id: uuid.UUID, user_id: str) -> MemberRole | None:
    async with res.sessions() as session, session.begin():
        await bind_organization(session, org_id)
        role: MemberRole | None = await session.scalar(
            select(OrgMember.role).where(
                OrgMember.organization_id == org_id,
                OrgMember.user_id == user_id,
                OrgMember.deleted_at.is_(None),
            )
        )
    return role


async def _api_key_role(res: Resources, org_id: uuid.UUID, key_hash: str) -> tuple[str, MemberRole] | None:
    async with res.sessions() as session, session.begin():
        await bind_organization(session, org_id)
        row = (
            await session.execute(
                select(ApiKey.id, ApiKey.role).where(
                    ApiKey.organization_id == org_id,
                    ApiKey.key_hash == key_hash,
                    ApiKey.revoked_at.is_(None),
                )
            )
        ).first()
    return (f"apikey:{row.id}", row.role) if row else None


async def current_caller(
    request: Request,
    res: Annotated[Resources, Depends(resources)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    scope_slug: Annotated[str | None, Header(alias="X-Scope-Slug", max_length=100)] = None,
) -> Caller:
    if credentials is None:
        raise unauthorized("A bearer token is required.")
    token = credentials.credentials
    key = parse_api_key(token) if token.startswith(API_KEY_PREFIX) else None
    user_id = None if key else await request.app.state.jwt_verifier.user_id(token)
    if not scope_slug:
        raise Problem(400, "The X-Scope-Slug header must name the organization.")
    org_id, tenant_id = await _organization(res, scope_slug)
    if key is not None:
        found = await _api_key_role(res, org_id, key.key_hash) if key.organization_id == org_id else None
        if found is None:
            raise Problem(404, NOT_FOUND)
        return Caller(principal=found[0], organization_id=org_id, tenant_id=tenant_id, role=found[1])
    assert user_id is not None
    role = await _member_role(res, org_id, user_id)
    if role is None:
        raise Problem(404, NOT_FOUND)
    return Caller(principal=user_id, organization_id=org_id, tenant_id=tenant_id, role=role)


async def admin_caller(caller: Annotated[Caller, Depends(current_caller)]) -> Caller:
    if caller.role is not MemberRole.ADMIN:
        raise Problem(403, "Only an admin of the organization may do this.")
    return caller


CallerDep = Annotated[Caller, Depends(current_caller)]
AdminDep = Annotated[Caller, Depends(admin_caller)]
ResourcesDep = Annotated[Resources, Depends(resources)]
