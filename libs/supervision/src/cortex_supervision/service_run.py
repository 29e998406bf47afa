"""How a service process runs: until SIGINT, SIGTERM or its supervisor's end, then says how it ended."""

import asyncio
import difflib
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
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


def settings_or_exit(
    settings_class: Callable[[], Settings], service: str, also_read: frozenset[str] = frozenset()
) -> Settings:
    """The service's settings from the environment. An invalid or missing value ends the process with
    CANNOT_START and one line naming each variable, not a traceback and a round of restarts. A variable
    with the settings' prefix that no setting reads (nor `also_read`: read elsewhere) is named on one line
    each: pydantic ignores it, so a misspelt one would change nothing without a word."""
    try:
        settings = settings_class()
    except ValueError as exc:  # pydantic's ValidationError is one
        print(f"{service} cannot start: {_invalid_settings(settings_class, exc)}", file=sys.stderr)
        sys.exit(CANNOT_START)
    for name, known in unread_variables(settings_class, os.environ, also_read):
        hint = f" (did you mean {known}?)" if known else ""
        print(f"{service}: {name} is no setting of {service}; it is ignored{hint}", file=sys.stderr)
    return settings


def setting_variables(settings_class: Any) -> set[str]:
    """Every environment variable the settings read: each field's aliases, else prefix + its name."""
    prefix = str(settings_class.model_config.get("env_prefix", ""))
    names = set()
    for field_name, field in settings_class.model_fields.items():
        aliases = field.validation_alias
        if hasattr(aliases, "choices"):  # pydantic's AliasChoices
            names |= {alias.upper() for alias in aliases.choices if isinstance(alias, str)}
        elif isinstance(aliases, str):
            names.add(aliases.upper())
        else:
            names.add((prefix + field_name).upper())
    return names


def unread_variables(
    settings_class: Any, environ: Mapping[str, str], also_read: frozenset[str] = frozenset()
) -> list[tuple[str, str | None]]:
    """The variables in `environ` with the settings' prefix that nothing reads, each with the closest name
    that is read, if one is close."""
    prefix = str(getattr(settings_class, "model_config", {}).get("env_prefix", "")).upper()
    if not prefix:
        return []
    known = setting_variables(settings_class) | also_read
    unread = sorted(name for name in environ if name.upper().startswith(prefix) and name.upper() not in known)
    return [(name, _closest(name.upper()[len(prefix) :], prefix, known)) for name in unread]


def _closest(suffix: str, prefix: str, known: set[str]) -> str | None:
    """The known name that `prefix + suffix` was probably meant to be: the one ending in it (`_BURST` for
    `_RATE_LIMIT_BURST`), else one spelt nearly alike."""
    tails = {name[len(prefix) :]: name for name in known if name.startswith(prefix)}
    ending = [name for tail, name in tails.items() if tail.endswith("_" + suffix)]
    if len(ending) == 1:
        return ending[0]
    close = difflib.get_close_matches(suffix, list(tails), n=1, cutoff=0.75)
    return tails[close[0]] if close else None


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
