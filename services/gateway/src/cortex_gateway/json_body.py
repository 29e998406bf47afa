"""Request bodies are JSON: a request that says it sends something else gets 415, not 422s about its fields;
one whose JSON repeats a key gets 422, as an event that does is dead-lettered."""

from typing import Any

from fastapi import Request

from cortex_contracts.json_keys import describe, repeated_keys
from cortex_gateway.problems import Problem
from cortex_gateway.routes.responses import problem

INVALID = "The request is not valid."  # as every 422's detail
UNSUPPORTED_MEDIA_TYPE: dict[int | str, dict[str, Any]] = {415: problem("The body is not sent as application/json")}


def _not_utf8_text(body: bytes) -> str | None:
    """Why the body is not JSON text in UTF-8 (RFC 8259 §8.1), if it is not. Python's json.loads would read
    UTF-16 and UTF-32 too, guessing from the NUL bytes they put in JSON text, which holds none in UTF-8."""
    try:
        body.decode()
    except UnicodeDecodeError as exc:
        return f"The body is not valid UTF-8 (byte {exc.start})."
    nul = body.find(b"\0")
    return None if nul < 0 else f"The body is not UTF-8: a NUL byte at {nul} (UTF-16 or UTF-32?)."


async def json_content(request: Request) -> None:
    """A route dependency: the body's Content-Type must be application/json or an `application/…+json` type,
    the ones FastAPI parses (strictly: a body without one is not read as JSON either). Refused with the type
    the route takes in `Accept` (RFC 9110 §15.5.16). `async`, as auth.py's: a plain `def` dependency would
    cost a worker-thread hop per request."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json")):
        body = await request.body()
        if reason := _not_utf8_text(body):
            raise Problem(
                422, INVALID, extensions={"errors": [{"loc": ["body"], "msg": reason, "type": "json_invalid"}]}
            )
        if keys := repeated_keys(body):  # FastAPI kept the last value of each
            raise Problem(
                422, INVALID, extensions={"errors": [{"loc": ["body"], "msg": describe(keys), "type": "json_invalid"}]}
            )
        return
    detail = f"Send the body as JSON with Content-Type: application/json (this request's: {media_type or 'none'})."
    raise Problem(415, detail, headers={"Accept": "application/json"})
