"""Every route refuses query parameters it does not declare (strict_query): after the caller's checks where
there is a caller, so the check moved from the app into the caller's dependencies, and a new route must not
slip through."""

from collections.abc import Sequence

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from cortex_gateway.app import create_app
from cortex_gateway.auth import admin_caller, member_caller
from cortex_gateway.settings import GatewaySettings
from cortex_gateway.strict_query import refuse_unknown_query

CHECKS = (refuse_unknown_query, member_caller, admin_caller)  # the callers' call it once they are known


def _api_routes(routes: Sequence[BaseRoute]) -> list[APIRoute]:
    """The app's routes, those of the routers it includes (FastAPI 0.165 includes them as they are) too."""
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif (router := getattr(route, "original_router", None)) is not None:
            found += _api_routes(router.routes)
    return found


def _calls(dependant: Dependant) -> bool:
    return dependant.call in CHECKS or any(_calls(sub) for sub in dependant.dependencies)


def test_every_route_checks_its_query_string() -> None:
    settings = GatewaySettings(database_url="postgresql://u@localhost/db", secret="s" * 32)
    routes = _api_routes(create_app(settings).routes)

    assert len(routes) > 5
    assert [route.path for route in routes if not _calls(route.dependant)] == []
