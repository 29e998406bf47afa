"""Refuse query parameters a route does not declare: a misspelt filter (`?tags=`) must not be
silently ignored and answered with an unfiltered page."""

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from cortex_gateway.problems import Problem


def _query_names(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _declared(route: APIRoute) -> set[str]:
    cached: set[str] | None = getattr(route, "_cortex_query_names", None)
    if cached is None:
        cached = _query_names(route.dependant)
        route._cortex_query_names = cached  # type: ignore[attr-defined]
    return cached


async def refuse_unknown_query(request: Request) -> None:
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    unknown = sorted(set(request.query_params) - _declared(route))
    if unknown:
        raise Problem(422, f"Unknown query parameter(s): {', '.join(repr(name) for name in unknown)}.")
