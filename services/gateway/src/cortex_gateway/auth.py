"""Who is calling, for which organization, with what role.

The organization comes only from the `X-Scope-Slug` header; membership (or the API key) is looked up
on every request under that organization's row-level security, in one statement (`access.py`), so a
revoked member or key loses access at once. A user who is not a member gets 404, exactly like one
naming an organization that does not exist, and so does an API key naming another organization. A key
that names this organization but is revoked or unknown gets 401: its credential is not valid.

Every dependency here is `async def`: FastAPI runs a plain `def` dependency in a worker thread, a
thread hop per request for no blocking work.
"""

import logging
import uuid
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from cortex_gateway.access import Access, DatabaseUnreachable, caller_access
from cortex_gateway.credentials import API_KEY_PREFIX, parse_api_key, unauthorized
from cortex_gateway.problems import Problem
from cortex_gateway.resources import Resources
from cortex_gateway.strict_query import refuse_unknown_query
from cortex_store.models import MemberRole

log = logging.getLogger(__name__)

bearer = HTTPBearer(auto_error=False, description="A JWT, or an API key (`cxk_...`).")


@dataclass(frozen=True)
class Caller:
    principal: str  # user id, or `apikey:<id>`
    organization_id: uuid.UUID
    tenant_id: str | None
    role: MemberRole


async def resources(request: Request) -> Resources:
    found: Resources = request.app.state.resources
    return found


# One answer for an organization that does not exist and one the credential is no member of (a key of another
# organization's, or a garbled one): which of the two it is is not told. "No such organization." alone sent
# an agent with a mistyped key to debug its slug (QA 48).
NOT_FOUND = "No such organization, or this credential is not one of its members."


async def _access(
    res: Resources, slug: str, *, user_id: str | None = None, key_hash: str | None = None
) -> Access | None:
    try:
        return await caller_access(res.access_pool, slug, user_id=user_id, key_hash=key_hash)
    except DatabaseUnreachable as exc:
        log.warning("caller lookup failed: %s", exc)
        raise Problem(503, "The database is not reachable.", headers={"Retry-After": "5"}) from exc


async def current_caller(
    request: Request,
    res: Annotated[Resources, Depends(resources)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    # Optional to the parser only, so that leaving it out is our 400 problem, not a generic 422.
    scope_slug: Annotated[
        str | None,
        Header(alias="X-Scope-Slug", max_length=100, description="Required: the organization's slug (400 without)."),
    ] = None,
) -> Caller:
    for name in ("Authorization", "X-Scope-Slug"):
        if len(request.headers.getlist(name)) > 1:  # a proxy may read the last where we read the first
            raise Problem(400, f"The {name} header is given more than once.")
    if credentials is None:
        raise unauthorized("A bearer token is required.")
    token = credentials.credentials
    key = parse_api_key(token) if token.startswith(API_KEY_PREFIX) else None
    user_id = None if key else await request.app.state.jwt_verifier.user_id(token)
    if not scope_slug:
        raise Problem(400, "The X-Scope-Slug header must name the organization.")
    if key is not None:
        access = await _access(res, scope_slug, key_hash=key.key_hash)
        # The key names its organization too: it must be the one the scope header names.
        if access is None or access.organization_id != key.organization_id:
            raise Problem(404, NOT_FOUND)
        if access.api_key_id is None or access.role is None:
            raise unauthorized("The API key is revoked or unknown.")
        principal = f"apikey:{access.api_key_id}"
    else:
        assert user_id is not None
        access = await _access(res, scope_slug, user_id=user_id)
        if access is None or access.role is None:
            raise Problem(404, NOT_FOUND)
        principal = user_id
    return Caller(
        principal=principal, organization_id=access.organization_id, tenant_id=access.tenant_id, role=access.role
    )


async def member_caller(request: Request, caller: Annotated[Caller, Depends(current_caller)]) -> Caller:
    """The caller, and then its query string checked (strict_query): one without credentials learns that
    first (401), not which parameters the route takes (QA 41)."""
    await refuse_unknown_query(request)
    return caller


async def admin_caller(request: Request, caller: Annotated[Caller, Depends(current_caller)]) -> Caller:
    if caller.role is not MemberRole.ADMIN:
        raise Problem(403, "Only an admin of the organization may do this.")
    await refuse_unknown_query(request)
    return caller


CallerDep = Annotated[Caller, Depends(member_caller)]
AdminDep = Annotated[Caller, Depends(admin_caller)]
ResourcesDep = Annotated[Resources, Depends(resources)]
