"""Who is calling, for which organization, with what role.

The organization comes only from the `X-Scope-Slug` header; membership is looked up in the database
on every request (a revoked member loses access at once). A caller who is not a member of the
organization gets 404, exactly like a caller naming an organization that does not exist.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated

import jwt
from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select

from cortex_gateway.problems import Problem
from cortex_gateway.resources import Resources
from cortex_store.models import MemberRole, Organization, OrgMember

JWT_ALGORITHM = "HS256"
JWT_ISSUER = "cortex"
bearer = HTTPBearer(auto_error=False, description="JWT signed with the deployment's secret (HS256).")


@dataclass(frozen=True)
class Caller:
    user_id: str
    organization_id: uuid.UUID
    tenant_id: str | None
    role: MemberRole


def resources(request: Request) -> Resources:
    found: Resources = request.app.state.resources
    return found


def _unauthorized(detail: str) -> Problem:
    return Problem(401, detail, headers={"WWW-Authenticate": "Bearer"})


def user_from_token(token: str, secret: str) -> str:
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[JWT_ALGORITHM],
            issuer=JWT_ISSUER,
            options={"require": ["sub", "exp", "iss"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise _unauthorized("The bearer token has expired.") from exc
    except jwt.PyJWTError as exc:
        raise _unauthorized("The bearer token is not valid.") from exc
    subject = claims["sub"]
    if not isinstance(subject, str) or not subject:
        raise _unauthorized("The bearer token names no user.")
    return subject


async def current_caller(
    res: Annotated[Resources, Depends(resources)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    scope_slug: Annotated[str | None, Header(alias="X-Scope-Slug", max_length=100)] = None,
) -> Caller:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized("A bearer token is required.")
    user_id = user_from_token(credentials.credentials, res.settings.secret.get_secret_value())
    if not scope_slug:
        raise Problem(400, "The X-Scope-Slug header must name the organization.")
    async with res.sessions() as session:
        row = (
            await session.execute(
                select(Organization.id, Organization.tenant_id, OrgMember.role)
                .join(OrgMember, OrgMember.organization_id == Organization.id)
                .where(Organization.slug == scope_slug, OrgMember.user_id == user_id)
            )
        ).first()
    if row is None:
        raise Problem(404, "No such organization.")
    return Caller(user_id=user_id, organization_id=row.id, tenant_id=row.tenant_id, role=row.role)


async def admin_caller(caller: Annotated[Caller, Depends(current_caller)]) -> Caller:
    if caller.role is not MemberRole.ADMIN:
        raise Problem(403, "Only an admin of the organization may do this.")
    return caller


CallerDep = Annotated[Caller, Depends(current_caller)]
AdminDep = Annotated[Caller, Depends(admin_caller)]
ResourcesDep = Annotated[Resources, Depends(resources)]
