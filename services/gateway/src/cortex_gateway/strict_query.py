"""Refuse query parameters a route does not declare: a misspelt filter (`?tags=`) must not be
silently ignored and answered with an unfiltered page. Likewise a single-valued parameter given twice
(`?agentId=a&agentId=b`): answering for one of them would silently ignore the other. And a query string that
is not UTF-8 once percent-decoded (`q=%FF`): Starlette reads each bad byte as U+FFFD, a query nobody sent."""

from types import UnionType
from typing import Any, Union, get_args, get_origin
from urllib.parse import unquote_to_bytes

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from cortex_gateway.problems import Problem

NAMED_AT_MOST = 10  # a request with thousands of odd parameters must not get them all echoed back


def _repeatable(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, set, tuple, frozenset):
        return True
    return origin in (Union, UnionType) and any(_repeatable(arg) for arg in get_args(annotation))


def _query_names(dependant: Dependant) -> dict[str, bool]:
    """Declared query parameter names, each with whether it may repeat."""
    names = {param.alias: _repeatable(param.field_info.annotation) for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _declared(route: APIRoute) -> dict[str, bool]:
    cached: dict[str, bool] | None = getattr(route, "_cortex_query_names", None)
    if cached is None:
        cached = _query_names(route.dependant)
        route._cortex_query_names = cached  # type: ignore[attr-defined]
    return cached


def _utf8(query: bytes) -> bool:
    try:
        unquote_to_bytes(query).decode("utf-8")  # strict: lone surrogates (`%ED%A0%80`) are refused too
    except UnicodeDecodeError:
        return False
    return True


async def refuse_unknown_query(request: Request) -> None:
    if not _utf8(request.scope.get("query_string", b"")):
        raise Problem(422, "The query string is not UTF-8 once percent-decoded.")
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    declared = _declared(route)
    unknown = sorted(set(request.query_params) - set(declared))
    if unknown:
        raise Problem(422, f"Unknown query parameter(s): {_names(unknown)}.")
    repeated = sorted(
        name for name, many in declared.items() if not many and len(request.query_params.getlist(name)) > 1
    )
    if repeated:
        raise Problem(422, f"Query parameter(s) given more than once: {_names(repeated)}.")


def _names(names: list[str]) -> str:
    named = ", ".join(repr(name[:100]) for name in names[:NAMED_AT_MOST])
    more = len(names) - NAMED_AT_MOST
    return f"{named} and {more} more" if more > 0 else named
