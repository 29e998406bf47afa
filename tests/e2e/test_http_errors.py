"""Every HTTP error is an RFC 9457 problem document with the right status; notes are accepted or awaited."""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NATS

from cortex_gateway.http_protocol import MAX_HEAD_BYTES
from cortex_gateway.tokens import issue_token
from tests.conftest import Org
from tests.events import IndexedWatcher, search_ids
from tests.services import RunningServices

pytestmark = pytest.mark.e2e

OTHER_SECRET = "not-the-deployment-secret-" + "y" * 32


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].split(";")[0] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["title"] == HTTPStatus(status).phrase  # RFC 9457 §4.2.1 (before, QA 30: "Not found", "Invalid cursor")
    for field in ("type", "title", "detail"):
        assert isinstance(body[field], str)
        assert body[field]
    return body


@pytest.fixture
async def anonymous(services: RunningServices) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=services.base_url, timeout=30) as client:
        yield client


def bearer(user: str, secret: str, *, lifetime: timedelta = timedelta(minutes=5)) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(user, secret, lifetime=lifetime)}"}


async def test_requests_without_a_valid_token_are_401(
    org: Org, anonymous: httpx.AsyncClient, services: RunningServices
) -> None:
    user = f"admin-{org.slug}"  # a member: only the token is wrong
    scope = {"X-Scope-Slug": org.slug}
    cases = {
        "missing": scope,
        "not bearer": {**scope, "Authorization": "Basic dXNlcjpwYXNz"},
        "garbage": {**scope, "Authorization": "Bearer not-a-jwt"},
        "bad signature": {**scope, **bearer(user, OTHER_SECRET)},
        "expired": {**scope, **bearer(user, services.secret, lifetime=timedelta(minutes=-5))},
    }
    for case, headers in cases.items():
        response = await anonymous.get("/api/memory", headers=headers)
        body = assert_problem(response, 401)
        assert response.headers["www-authenticate"] == "Bearer", case
        if case == "expired":
            assert "expired" in body["detail"]


async def test_a_missing_scope_header_is_400(org: Org, anonymous: httpx.AsyncClient, services: RunningServices) -> None:
    response = await anonymous.get("/api/memory", headers=bearer(f"member-{org.slug}", services.secret))

    assert "X-Scope-Slug" in assert_problem(response, 400)["detail"]


async def test_a_credential_or_scope_header_given_twice_is_400(
    org: Org, anonymous: httpx.AsyncClient, services: RunningServices
) -> None:
    """QA 41: the first was taken; a proxy in front may check the last. Either given twice is ambiguous."""
    member = bearer(f"member-{org.slug}", services.secret)["Authorization"]
    stranger = bearer(f"stranger-{uuid.uuid4().hex}", services.secret)["Authorization"]
    twice = [
        [("Authorization", member), ("Authorization", stranger), ("X-Scope-Slug", org.slug)],
        [("Authorization", member), ("X-Scope-Slug", org.slug), ("X-Scope-Slug", f"other-{org.slug}")],
    ]
    for headers in twice:
        response = await anonymous.get("/api/memory", headers=httpx.Headers(headers))
        assert "more than once" in assert_problem(response, 400)["detail"]
    once = await anonymous.get("/api/memory", headers={"Authorization": member, "X-Scope-Slug": org.slug})
    assert once.status_code == 200, once.text


async def test_a_non_member_gets_404_like_an_unknown_organization(
    org: Org, anonymous: httpx.AsyncClient, services: RunningServices
) -> None:
    stranger = bearer(f"stranger-{uuid.uuid4().hex}", services.secret)
    not_member = await anonymous.get("/api/memory", headers={**stranger, "X-Scope-Slug": org.slug})
    no_such_org = await anonymous.get("/api/memory", headers={**stranger, "X-Scope-Slug": f"nope-{uuid.uuid4().hex}"})

    assert assert_problem(not_member, 404) == assert_problem(no_such_org, 404)  # nothing tells them apart


@pytest.mark.parametrize(
    "params", [{"limit": -3}, {"limit": 0}, {"limit": 100000}, {"limit": "ten"}, {"status": "bogus"}]
)
async def test_an_invalid_limit_or_status_is_422(org: Org, params: dict[str, Any]) -> None:
    response = await org.member.get("/api/memory", params=params)

    body = assert_problem(response, 422)
    assert any(error["loc"][:2] == ["query", *params] for error in body["errors"])


async def test_a_single_valued_parameter_given_twice_is_422_but_a_repeated_filter_is_not(org: Org) -> None:
    twice = await org.member.get("/api/memory/agent-memories", params=[("agentId", "a"), ("agentId", "b")])
    assert "agentId" in assert_problem(twice, 422)["detail"]

    filters = await org.member.get("/api/memory", params=[("type", "decision"), ("type", "runbook")])
    assert filters.status_code == 200, filters.text


async def test_unknown_parameters_are_422_naming_the_first_ten(org: Org) -> None:
    one = await org.member.get("/api/memory", params={"tags": "x"})
    assert assert_problem(one, 422)["detail"] == "Unknown query parameter(s): 'tags'."

    many = await org.member.get("/api/memory", params={f"p{i:04}": "x" for i in range(2000)})

    detail = assert_problem(many, 422)["detail"]
    assert detail.startswith("Unknown query parameter(s): 'p0000', 'p0001'")
    assert detail.endswith("'p0009' and 1990 more.")  # before: all 2,000 names, 17 KB


async def test_the_query_string_is_checked_after_the_caller(org: Org, anonymous: httpx.AsyncClient) -> None:
    """QA 41: an unknown parameter was a 422 before the credentials were looked at, so a caller without any
    learnt which parameters a route takes, and a member which an admin's route takes."""
    assert_problem(await anonymous.get("/api/memory", params={"tags": "x"}), 401)
    assert_problem(await anonymous.get("/api/memory?q=%FF"), 401)
    assert_problem(await org.member.get("/api/memory/plugins", params={"tags": "x"}), 403)
    assert "'tags'" in assert_problem(await org.admin.get("/api/memory/plugins", params={"tags": "x"}), 422)["detail"]
    assert "'x'" in assert_problem(await anonymous.get("/healthz", params={"x": "1"}), 422)["detail"]


@pytest.mark.parametrize(
    ("path", "query"),
    [("/api/memory", "q=%FF%FE"), ("/api/memory", "tag=%ED%A0%80"), ("/api/memory/recall", "q=caf%E9")],
)
async def test_a_query_string_that_is_not_utf8_is_422(org: Org, path: str, query: str) -> None:
    """Before (QA 30): each bad byte read as U+FFFD, and a 200 for a query nobody sent."""
    response = await org.member.get(f"{path}?{query}")

    assert "not UTF-8" in assert_problem(response, 422)["detail"]


async def test_a_query_string_in_utf8_is_taken(org: Org) -> None:
    response = await org.member.get("/api/memory?q=caf%C3%A9+%F0%9F%98%80&tag=%E2%82%AC")

    assert response.status_code == 200, response.text


async def test_a_url_longer_than_the_parser_takes_is_a_400_problem(org: Org) -> None:
    # Over httpx's own limit (64 KiB), so sent by hand.
    url = org.member.base_url
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(f"GET /api/memory?q={'a' * 70_000} HTTP/1.1\r\nHost: {url.host}\r\n\r\n".encode())
    answer = await reader.read()
    writer.close()

    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert b"content-type: application/problem+json" in head.lower()  # before: uvicorn's plain text
    assert "longer than 64 KiB" in json.loads(body)["detail"]


async def raw_exchange(org: Org, request: bytes) -> tuple[bytes, dict[str, Any]]:
    """Send bytes as they are; the answer's head and its problem document."""
    url = org.member.base_url
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(request)
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    head, body = answer.split(b"\r\n\r\n", 1)
    return head, json.loads(body)


async def test_a_url_with_raw_non_ascii_is_a_400_that_says_to_percent_encode_it(org: Org) -> None:
    """Before (QA 47): `?q=café` sent unencoded was told its URL might be over 64 KiB, for 4 characters."""
    head, problem = await raw_exchange(org, "GET /api/memory?q=café HTTP/1.1\r\nHost: x\r\n\r\n".encode())

    assert head.startswith(b"HTTP/1.1 400 "), head
    assert "must be percent-encoded" in problem["detail"]


@pytest.mark.parametrize(
    "headers",
    [
        f"X-Big: {'a' * 4 * 2**20}\r\n",  # before (QA 30): 200, and other requests waited behind it
        "".join(f"X-H{i}: v\r\n" for i in range(101)),
    ],
    ids=["a 4 MiB header", "101 headers"],
)
async def test_a_request_head_too_large_is_a_431_problem(org: Org, headers: str) -> None:
    head, problem = await raw_exchange(org, f"GET /healthz HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())

    assert head.startswith(b"HTTP/1.1 431 "), head
    assert b"content-type: application/problem+json" in head.lower()
    assert problem["status"] == 431
    assert "over 128 KiB or has over 100 headers" in problem["detail"]


def head_of(size: int, request_line: bytes = b"GET /healthz HTTP/1.1", *, close: bool = True) -> bytes:
    """A request head (request line, headers, the blank line) of exactly `size` bytes."""
    start = request_line + b"\r\nHost: x\r\n" + (b"Connection: close\r\n" if close else b"") + b"X-Pad: "
    head = start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"
    assert len(head) == size
    return head


@pytest.mark.parametrize("split", [False, True], ids=["in one write", "all but its end first"])
@pytest.mark.parametrize(
    ("size", "status"), [(MAX_HEAD_BYTES, 200), (MAX_HEAD_BYTES + 1, 431)], ids=["128 KiB", "128 KiB + 1"]
)
async def test_the_head_limit_is_exact(org: Org, size: int, status: int, split: bool) -> None:
    """Before (QA 42): what arrived was parsed before it was counted, so a head that ended in the read that
    crossed the limit was served, up to ~192 KiB."""
    request = head_of(size)
    url = org.member.base_url
    reader, writer = await asyncio.open_connection(url.host, url.port)
    if split:  # the gateway reads the first part alone, within the limit and without the head's end
        writer.write(request[: MAX_HEAD_BYTES - 100])
        await writer.drain()
        await asyncio.sleep(0.3)
        request = request[MAX_HEAD_BYTES - 100 :]
    writer.write(request)
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()

    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), head
    if status == 431:
        assert json.loads(body)["detail"] == "The request's head is over 128 KiB or has over 100 headers."
    else:
        assert json.loads(body) == {"status": "ok"}


async def test_a_head_of_the_limit_with_its_body_in_the_same_write_reaches_the_app(org: Org) -> None:
    body = b'{"content": "' + b"a" * 300 * 1024 + b'"}'
    request_line = b"POST /api/memory/entries HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: "
    head, problem = await raw_exchange(org, head_of(MAX_HEAD_BYTES, request_line + str(len(body)).encode()) + body)

    assert (head.split(b" ")[1], problem["status"]) == (b"401", 401), head  # no credentials: the app's answer


async def test_a_head_pipelined_behind_another_request_is_counted_from_where_that_one_ended(org: Org) -> None:
    """Two requests in one write; the second's head is exactly the limit: both are served."""
    url = org.member.base_url
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(head_of(300, close=False) + head_of(MAX_HEAD_BYTES))
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()

    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert answer.count(b"HTTP/1.1 200 ") == 2, answer[:200]
    assert b"HTTP/1.1 431" not in answer


@pytest.mark.parametrize("pipelined", [False, True], ids=["after its answer", "in the same write"])
async def test_a_head_after_a_large_body_on_one_connection_is_counted_alone(org: Org, pipelined: bool) -> None:
    """Before (QA 44): after a POST of a 125 KB body, the next request on the same connection was counted
    with that body and refused with a 431 at a head of 8 KB."""
    body = b'{"content": "' + b"a" * 125_000 + b'"}'
    post = (
        b"POST /api/memory/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    following = head_of(MAX_HEAD_BYTES - 2048 if pipelined else MAX_HEAD_BYTES)
    url = org.member.base_url
    reader, writer = await asyncio.open_connection(url.host, url.port)
    if pipelined:
        writer.write(post + following)
    else:
        writer.write(post)
        first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        length = int(next(line for line in first.split(b"\r\n") if line.lower().startswith(b"content-length:"))[15:])
        await asyncio.wait_for(reader.readexactly(length), 30)
        assert first.startswith(b"HTTP/1.1 401 "), first
        writer.write(following)
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()

    assert b"HTTP/1.1 431" not in answer, answer[:300]
    assert answer.count(b"HTTP/1.1 200 ") == 1, answer[:300]


async def test_a_request_with_a_body_in_the_same_packets_as_its_head_is_taken(org: Org) -> None:
    """The head's bound counts the head only: a 512 KiB body sent with it reaches the app."""
    body = b'{"content": "' + b"a" * 512 * 1024 + b'"}'
    head, problem = await raw_exchange(
        org,
        b"POST /api/memory/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + b"Content-Length: "
        + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n"
        + body,
    )

    assert (head.split(b" ")[1], problem["status"]) == (b"401", 401), head  # no credentials: the app's answer


async def test_a_member_may_not_add_notes(org: Org) -> None:
    response = await org.member.post("/api/memory/documents", json={"title": "Mine", "body": "Not allowed."})

    assert_problem(response, 403)


@pytest.mark.parametrize(
    "note",
    [
        {"title": "Fine", "body": "Fine.", "unexpected": True},
        {"body": "No title."},
        {"title": ""},
        {"title": "Tags", "tags": [""]},
    ],
)
async def test_an_invalid_note_is_422(org: Org, note: dict[str, Any]) -> None:
    response = await org.admin.post("/api/memory/documents", json=note)

    assert assert_problem(response, 422)["errors"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/memory/entries", b'{"content": "a", "content": "b"}'),
        ("/api/memory/entries", b'{"content": "a", "metadata": {"k": 1, "\\u006b": 2}}'),  # an escape counts
        ("/api/memory/documents", b'{"title": "t", "body": "b", "title": "u"}'),
    ],
)
async def test_a_body_whose_json_repeats_a_key_is_422(org: Org, path: str, body: bytes) -> None:
    """Before (QA 30): 202, the last value kept; other parsers keep the first (an event that repeats one is
    dead-lettered)."""
    response = await org.admin.post(path, content=body, headers={"Content-Type": "application/json"})

    errors = assert_problem(response, 422)["errors"]
    assert [(error["type"], error["loc"]) for error in errors] == [("json_invalid", ["body"])]
    assert "repeats" in errors[0]["msg"]
    assert (await org.member.get("/api/memory/stats")).json()["memoryEntries"] == 0


@pytest.mark.parametrize("content", ["", "   ", "\n\t ", "\u200b\u200b", "\ufeff\u200d "])  # zero-width: invisible
async def test_an_entry_without_text_is_422(org: Org, content: str) -> None:
    response = await org.member.post("/api/memory/entries", json={"content": content, "partition": "semantic"})

    errors = assert_problem(response, 422)["errors"]
    assert [error["loc"] for error in errors] == [["body", "content"]]
    assert (await org.member.get("/api/memory/stats")).json()["memoryEntries"] == 0


@pytest.mark.parametrize("path", ["/api/memory", "/api/memory/facets", "/api/memory/facets/type", "/api/memory/recall"])
async def test_a_query_over_its_limit_once_in_nfc_is_422_and_one_within_it_is_taken(org: Org, path: str) -> None:
    """U+0958 is two characters in NFC: 2,001 of them passed the gateway's 4,000 and the aggregator refused
    the folded query (400 "Invalid request"; QA 44). The limit holds for the query as searched."""
    over = await org.member.get(path, params={"q": "\u0958" * 2001})
    body = assert_problem(over, 422)
    assert "over 4000 characters in Unicode NFC (4002)" in body["errors"][0]["msg"]
    within = await org.member.get(path, params={"q": "\u0958" * 2000})
    assert within.status_code == 200, within.text


@pytest.mark.parametrize("q", ["   ", "\u200b"])
async def test_a_blank_recall_is_422(org: Org, q: str) -> None:
    """Before (QA 30): a 200 with whatever entries; the feed reads a blank `q` as none, recall needs one."""
    response = await org.member.get("/api/memory/recall", params={"q": q})

    assert [error["loc"] for error in assert_problem(response, 422)["errors"]] == [["query", "q"]]


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ("NaN", "NaN or an infinite number"),
        ("[1e400]", "NaN or an infinite number"),
        ('"x\\u0000y"', "NUL"),
        ('"x\\ud800y"', "lone surrogate"),  # before: a 500 from the event's serialiser
        ('{"\\udfff": 1}', "lone surrogate"),
        ('{"a":' * 40 + "1" + "}" * 40, "deeper than 32 levels"),
        ('{"a":' * 300 + "1" + "}" * 300, "deeper than 32 levels"),  # before: a 500 from the serialiser
    ],
)
async def test_metadata_jsonb_could_not_store_is_422(org: Org, metadata: str, reason: str) -> None:
    body = '{"content": "With odd metadata", "partition": "semantic", "metadata": {"m": ' + metadata + "}}"
    response = await org.member.post(
        "/api/memory/entries", content=body.encode(), headers={"Content-Type": "application/json"}
    )

    errors = assert_problem(response, 422)["errors"]
    assert [error["loc"] for error in errors] == [["body", "metadata"]]
    assert reason in errors[0]["msg"]
    assert (await org.member.get("/api/memory/stats")).json()["memoryEntries"] == 0


@pytest.mark.parametrize(
    ("body", "msg"),
    [
        (b'{"content": "caf\xe9", "partition": "semantic"}', "not valid UTF-8 (byte 16)"),  # before: a 400
        (b'{"content": "cut', "JSON decode error"),
        # Before: read as JSON all the same (json.loads guesses the encoding), and the entry stored.
        ('{"content": "utf-16", "partition": "semantic"}'.encode("utf-16"), "not valid UTF-8 (byte 0)"),
        ('{"content": "utf-16", "partition": "semantic"}'.encode("utf-16-le"), "a NUL byte at 1"),
        ('{"content": "utf-32", "partition": "semantic"}'.encode("utf-32-be"), "a NUL byte at 0"),
        (b'{"content": "x", "metadata": {"n": ' + b"9" * 4301 + b"}}", "(4300 digits)"),  # before: a 400
        (
            b'{"content": "x", "metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "nested deeper than the parser",
        ),  # before: a 400
    ],
)
async def test_a_body_that_is_not_json_text_is_422(org: Org, body: bytes, msg: str) -> None:
    response = await org.member.post("/api/memory/entries", content=body, headers={"Content-Type": "application/json"})

    errors = assert_problem(response, 422)["errors"]
    assert [(error["loc"][0], error["type"]) for error in errors] == [("body", "json_invalid")]
    assert msg in errors[0]["msg"]


@pytest.mark.parametrize("path", ["/api/memory/entries", "/api/memory/documents"])
async def test_a_body_not_declared_as_json_is_415(org: Org, path: str) -> None:
    body = b'{"title": "Typed"}' if path.endswith("documents") else b'{"content": "x", "partition": "semantic"}'
    undeclared = org.admin.build_request("POST", path, content=body)
    assert "content-type" not in undeclared.headers
    refused = [await org.admin.send(undeclared)] + [
        await org.admin.post(path, content=body, headers={"Content-Type": media_type})
        for media_type in ("text/plain", "application/x-www-form-urlencoded", "text/json; charset=utf-8")
    ]

    details = [assert_problem(response, 415)["detail"] for response in refused]
    assert [detail.rsplit(": ", 1)[1] for detail in details] == [
        "none).",
        "text/plain).",
        "application/x-www-form-urlencoded).",
        "text/json).",
    ]
    assert {response.headers["accept"] for response in refused} == {"application/json"}
    stats = (await org.member.get("/api/memory/stats")).json()
    assert (stats["memoryEntries"], stats["documentsIndexed"]) == (0, 0)
    # JSON under any of its names goes through to validation.
    for media_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
        checked = await org.admin.post(path, content=b"[]", headers={"Content-Type": media_type})
        assert_problem(checked, 422)


async def test_an_empty_cursor_is_the_first_page(org: Org) -> None:
    created = await org.admin.post("/api/memory/documents", params={"wait": "true"}, json={"title": "Only note"})
    assert created.status_code == 201, created.text

    for params in ({"cursor": ""}, {"cursor": "", "q": "note"}):
        response = await org.member.get("/api/memory", params=params)
        assert response.status_code == 200, response.text
        assert [item["id"] for item in response.json()["items"]] == [created.json()["id"]]


async def test_a_forged_or_altered_cursor_is_400(org: Org) -> None:
    for i in range(2):
        created = await org.admin.post("/api/memory/documents", params={"wait": "true"}, json={"title": f"Note {i}"})
        assert created.status_code == 201, created.text
    page = (await org.member.get("/api/memory", params={"limit": 1})).json()
    cursor = page["nextCursor"]
    assert cursor
    assert (await org.member.get("/api/memory", params={"limit": 1, "cursor": cursor})).status_code == 200

    body, mac = cursor.split(".")
    altered_body = ("A" if body[0] != "A" else "B") + body[1:]
    forged = [
        "forged.cursor",
        "bm90IGEgY3Vyc29y",  # no MAC at all
        f"{altered_body}.{mac}",
        f"{body}.{mac[::-1]}",
        f"{body}.{mac[:-1]}é",  # not ASCII: before, a 502 (hmac.compare_digest raised in the aggregator)
    ]
    for bad in forged:
        response = await org.member.get("/api/memory", params={"limit": 1, "cursor": bad})
        assert_problem(response, 400)
    # A genuine cursor of the feed is no cursor for a search.
    response = await org.member.get("/api/memory", params={"limit": 1, "cursor": cursor, "q": "note"})
    assert_problem(response, 400)


async def test_an_admin_note_with_wait_is_201_and_searchable(org: Org) -> None:
    word = f"wombat{uuid.uuid4().hex[:8]}"

    response = await org.admin.post(
        "/api/memory/documents",
        params={"wait": "true"},
        json={"title": f"Standup {word}", "body": f"The {word} standup moves to 10:00.", "tags": ["meetings"]},
    )

    assert response.status_code == 201, response.text
    note_id = response.json()["id"]
    found = await org.member.get("/api/memory", params={"q": word})
    items = found.json()["items"]
    assert [item["id"] for item in items] == [note_id]
    assert items[0]["kind"] == "note"
    assert items[0]["title"] == f"Standup {word}"


async def test_an_admin_note_without_wait_is_202_and_indexed_later(org: Org, nats_client: NATS) -> None:
    watcher = await IndexedWatcher().start(nats_client, org.id)

    response = await org.admin.post("/api/memory/documents", json={"title": "Later", "body": "Eventually."})

    assert response.status_code == 202, response.text
    note_id = uuid.UUID(response.json()["id"])
    await watcher.wait_for(note_id, 1)
    await watcher.stop()
    assert await search_ids(org.member) == [str(note_id)]


async def test_health_and_readiness(anonymous: httpx.AsyncClient) -> None:
    health = await anonymous.get("/healthz")
    ready = await anonymous.get("/readyz")

    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"nats": True, "postgres": True}}


async def test_health_and_readiness_answer_head_probes(anonymous: httpx.AsyncClient) -> None:
    health = await anonymous.head("/healthz")
    ready = await anonymous.head("/readyz")

    assert (health.status_code, health.content) == (200, b"")
    assert (ready.status_code, ready.content) == (200, b"")


@pytest.mark.parametrize(("method", "path"), [("GET", "/api/memory/"), ("POST", "/api/memory/entries/")])
async def test_a_path_with_a_trailing_slash_is_a_404_problem_not_a_redirect(org: Org, method: str, path: str) -> None:
    """Before (QA 30): a 307 to the path without it, on the host the request's `Host` header named."""
    response = await org.member.request(method, path, headers={"Host": "evil.example"}, json={"content": "x"})

    assert "location" not in response.headers
    assert_problem(response, 404)
