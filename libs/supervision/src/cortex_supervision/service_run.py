"""How a service process runs: until SIGINT, SIGTERM or its supervisor's end, then says how it ended."""

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from cortex_supervision.lifeline import watch_lifeline
from cortex_supervision.readiness import report_ready

log = logging.getLogger(__name__)

# The exit code of a service that cannot run with its configuration: restarting it would fail the same way.
CANNOT_START = 2


class CannotStart(Exception):
    """The configuration cannot work (a pinned plugin that is not installed, settings missing): say why, in
    one line, and exit with CANNOT_START."""


Settings = TypeVar("Settings")


def settings_or_exit(settings_class: Callable[[], Settings], service: str) -> Settings:
    """The service's settings from the environment. An invalid or missing value ends the process with
    CANNOT_START and one line naming each variable, not a traceback and a round of restarts."""
    try:
        return settings_class()
    except ValueError as exc:  # pydantic's ValidationError is one
        print(f"{service} cannot start: {_invalid_settings(settings_class, exc)}", file=sys.stderr)
        sys.exit(CANNOT_START)


def _invalid_settings(settings_class: Any, exc: ValueError) -> str:
    """`CORTEX_X_PORT: Input should be a valid integer; …` — never the values, which may be secrets."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    prefix = str(getattr(settings_class, "model_config", {}).get("env_prefix", ""))
    described = []
    for error in errors():
        name = str((error.get("loc") or ("",))[0])
        variable = name if name.isupper() else (prefix + name).upper()  # an alias is the variable itself
        described.append(f"{variable}: {error.get('msg', 'invalid')}")
    return "; ".join(described)


class Service(Protocol):
    stop: asyncio.Event
    lost: bool  # stopped because its NATS client closed for good

    async def run(self) -> None: ...


async def run_until_stopped(build: Callable[[], Service]) -> int:
    """The exit code: CANNOT_START when `build` refuses the configuration, 1 when NATS was lost (its
    supervisor restarts it), else 0."""
    try:
        service = build()
    except CannotStart as exc:
        log.error("cannot start: %s", exc)  # noqa: TRY400 - one line that says why, no traceback
        return CANNOT_START
    report_ready()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, service.stop.set)
    watch_lifeline()  # after the handlers: the SIGTERM it sends is a clean stop
    await service.run()
    return 1 if service.lost else 0
