"""HEAD wherever GET (RFC 9110 §9.3.2): the GET's status and headers, Content-Length included, and no body.
Before (QA 42): 405 on every route but /healthz and /readyz."""

import asyncio
import uuid

import httpx
import pytest

from tests.conftest import Org
from tests.services import RunningServices

pytestmark = pytest.mark.e2e

NOT_COMPARED = {"date"}  # the one header that may differ between two answers a second apart


def compared(response: httpx.Response) -> dict[str, str]:
    return {name: value for name, value in response.headers.items() if name not in NOT_COMPARED}


async def assert_head_is_get(client: httpx.AsyncClient, path: str) -> httpx.Response:
    got = await client.get(path)
    head = await client.head(path)

    assert head.status_code == got.status_code, (path, head.status_code, got.text)
    assert compared(head) == compared(got), path
    assert head.headers["content-length"] == str(len(got.content)), path
    return got


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/memory", 200),
        ("/api/memory?q=pricing&tag=sales", 200),
        ("/api/memory/facets", 200),
        ("/api/memory/facets/tag?limit=5", 200),
        ("/api/memory/stats", 200),
        ("/api/memory/recall?q=pricing", 200),
        (f"/api/memory/documents/{uuid.UUID(int=1)}", 404),
        ("/api/memory?tags=sales", 422),  # unknown parameter: checked alike
        ("/api/memory/plugins", 403),  # admin only: a member is refused alike
        ("/api/memory/entries", 405),  # no GET, so no HEAD either
    ],
)
async def test_head_answers_as_get_does_for_a_member(org: Org, path: str, status: int) -> None:
    got = await assert_head_is_get(org.member, path)

    assert got.status_code == status, got.text


async def test_a_405_allows_head_wherever_it_allows_get(org: Org) -> None:
    """Before (QA 44): `Allow: GET` on a route that answers HEAD too."""
    assert (await org.member.delete("/api/memory/stats")).headers["allow"] == "GET, HEAD"
    assert (await org.member.head("/api/memory/entries")).headers["allow"] == "POST"


async def test_head_answers_an_admin_route_for_an_admin(org: Org) -> None:
    assert (await assert_head_is_get(org.admin, "/api/memory/plugins")).status_code == 200


async def test_head_without_credentials_is_401_as_get_is(org: Org, services: RunningServices) -> None:
    async with httpx.AsyncClient(base_url=services.base_url, timeout=30) as anonymous:
        anonymous.headers["X-Scope-Slug"] = org.slug
        got = await assert_head_is_get(anonymous, "/api/memory")
        health = await assert_head_is_get(anonymous, "/healthz")

    assert got.status_code == 401
    assert got.headers["www-authenticate"] == "Bearer"
    assert health.status_code == 200


async def test_a_head_answer_carries_no_body_on_the_wire(org: Org) -> None:
    """httpx reads no body after a HEAD, whatever the server sends: read the socket itself."""
    url = org.member.base_url
    credentials = "".join(f"{name}: {org.member.headers[name]}\r\n" for name in ("Authorization", "X-Scope-Slug"))
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(f"HEAD /api/memory/stats HTTP/1.1\r\nHost: x\r\n{credentials}Connection: close\r\n\r\n".encode())
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()

    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 "), head
    fields = {name.lower(): value for name, _, value in (line.partition(": ") for line in head.decode().split("\r\n"))}
    assert int(fields["content-length"]) > 0  # the GET's length
    assert body == b""
