"""RFC 9457 problem details for every error the API returns."""

import logging
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from nats.errors import Error as NatsError
from nats.errors import MaxPayloadError
from starlette.exceptions import HTTPException as StarletteHTTPException

from cortex_messaging.publisher import MessageTooLarge

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"


class Problem(Exception):
    """Raise to answer with a problem document."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        title: str | None = None,
        headers: dict[str, str] | None = None,
        extensions: dict[str, object] | None = None,
    ) -> None:
        """`extensions`: members beside RFC 9457's own (`errors` of a 422, the `id` a 504 accepted)."""
        super().__init__(detail)
        self.status = status
        self.title = title or HTTPStatus(status).phrase
        self.detail = detail
        self.headers = headers
        self.extensions = extensions


def problem_response(
    request: Request,
    status: int,
    detail: str,
    *,
    title: str | None = None,
    headers: dict[str, str] | None = None,
    extensions: dict[str, object] | None = None,
) -> JSONResponse:
    body = problem_document(status, detail, title=title, instance=request.url.path) | (extensions or {})
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)


def problem_document(
    status: int, detail: str, *, title: str | None = None, instance: str | None = None
) -> dict[str, object]:
    """An RFC 9457 problem document's members (`instance` left out when there is no request path)."""
    body: dict[str, object] = {
        "type": "about:blank",
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if instance is not None:
        body["instance"] = instance
    return body


def problem_bytes(status: int, detail: str, *, instance: str | None = None) -> bytes:
    """A problem document as the app's JSONResponse writes it, for answers sent before the app sees the request."""
    return bytes(JSONResponse(problem_document(status, detail, instance=instance)).body)


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(Problem)
    async def on_problem(request: Request, exc: Problem) -> JSONResponse:
        return problem_response(
            request, exc.status, exc.detail, title=exc.title, headers=exc.headers, extensions=exc.extensions
        )

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors: list[dict[str, object]] = [
            {"loc": list(err.get("loc", ())), "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))}
            for err in exc.errors()
        ]
        return problem_response(request, 422, "The request is not valid.", extensions={"errors": errors})

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc.__cause__, UnicodeDecodeError):  # FastAPI's 400 for it; bad JSON is a 422 there
            return _not_utf8(request, exc.__cause__)
        if isinstance(exc.__cause__, RecursionError):  # FastAPI's 400 for it, as for a body it cannot parse
            return _json_invalid(request, "The JSON is nested deeper than the parser goes.")
        if isinstance(exc.__cause__, ValueError):  # such as an integer of more digits than Python reads (4300)
            return _json_invalid(request, f"The JSON cannot be read: {str(exc.__cause__).split(';', 1)[0]}.")
        return problem_response(request, exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))

    @app.exception_handler(MessageTooLarge)
    @app.exception_handler(MaxPayloadError)
    async def on_too_large(request: Request, exc: Exception) -> JSONResponse:
        detail = str(exc) or "NATS refused the message's size"
        return problem_response(request, 413, f"The request is too large to send as one event: {detail}.")

    @app.exception_handler(NatsError)
    async def on_nats(request: Request, exc: NatsError) -> JSONResponse:
        log.warning("NATS failed on %s %s: %r", request.method, request.url.path, exc)
        return problem_response(
            request, 503, "The event bus is not reachable; try again.", headers={"Retry-After": "5"}
        )

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        # The traceback comes once, from the server: Starlette raises the error again after this answer.
        log.error("unhandled %s on %s %s", type(exc).__name__, request.method, request.url.path)
        return problem_response(request, 500, "An unexpected error occurred.")


def _not_utf8(request: Request, error: UnicodeDecodeError) -> JSONResponse:
    return _json_invalid(request, f"The body is not valid UTF-8 (byte {error.start}).")


def _json_invalid(request: Request, msg: str) -> JSONResponse:
    """A body that cannot be read as JSON text is refused as one that is not JSON is: 422 `json_invalid`."""
    errors: list[dict[str, object]] = [{"loc": ["body"], "msg": msg, "type": "json_invalid"}]
    return problem_response(request, 422, "The request is not valid.", extensions={"errors": errors})
