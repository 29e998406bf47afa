"""Organizations with an admin's and a member's HTTP client, for fixtures that outlive one test.

The `make_org` fixture does the same per test against the shared gateway; this one takes any gateway's
base URL, and the caller closes the clients (`close_org`).
"""

import uuid

import httpx

from cortex_cli.organizations import ensure_membership
from cortex_gateway.tokens import issue_token
from cortex_store.models import MemberRole
from tests.conftest import Org


def client_for(base_url: str, token: str, slug: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base_url, timeout=30, headers={"Authorization": f"Bearer {token}", "X-Scope-Slug": slug}
    )


async def create_org(database_url: str, base_url: str, secret: str, *, prefix: str = "org") -> Org:
    """A new organization with one admin and one member, each with a client for `base_url`."""
    slug = f"{prefix}-{uuid.uuid4().hex[:12]}"
    admin, member = f"admin-{slug}", f"member-{slug}"
    org_id = await ensure_membership(database_url, slug, admin, MemberRole.ADMIN, create=True)
    await ensure_membership(database_url, slug, member, MemberRole.MEMBER, create=True)
    return Org(
        slug=slug,
        id=org_id,
        admin=client_for(base_url, issue_token(admin, secret), slug),
        member=client_for(base_url, issue_token(member, secret), slug),
    )


async def close_org(org: Org) -> None:
    await org.admin.aclose()
    await org.member.aclose()
