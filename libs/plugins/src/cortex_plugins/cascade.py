"""The selection cascade, as a pure function: environment pin → organization's choice → default → first loaded.

What happens when a rung names something unusable (not installed, or failed to load):
- the environment pin is an operator's explicit order, so it is never silently replaced: nothing is
  selected and the selection says why (the service refuses to start that category; the listing shows it);
- the organization's choice and the default fall through to the next rung, with a note saying what was
  passed over and why — an uninstalled or broken plugin must not stop an organization's service.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from cortex_contracts.plugins import SelectionReason


@dataclass(frozen=True)
class Candidate:
    """A plugin as the cascade sees it: its name, and whether it loaded (with the error if not)."""

    name: str
    loaded: bool = True
    error: str | None = None
    configured: bool = True


class CandidateLike(Protocol):
    """A `Candidate`, or one that loads its plugin when first asked (the registry's)."""

    @property
    def name(self) -> str: ...

    @property
    def loaded(self) -> bool: ...

    @property
    def error(self) -> str | None: ...

    @property
    def configured(self) -> bool: ...


@dataclass(frozen=True)
class Selection:
    name: str | None  # None: nothing usable, see `notes`
    reason: SelectionReason
    notes: tuple[str, ...] = ()

    @property
    def detail(self) -> str | None:
        return "; ".join(self.notes) or None


def not_installed(installed: Iterable[str], name: str) -> str | None:
    """Why `name` cannot be used when it is not among the installed names, or None if it is."""
    names = sorted(set(installed))
    return None if name in names else f"{name!r} is not installed (installed: {', '.join(names) or 'none'})"


def _unusable(candidates: dict[str, CandidateLike], name: str) -> str | None:
    """Why `name` cannot be used, or None if it can."""
    found = candidates.get(name)
    if found is None:
        return not_installed(candidates, name)
    if not found.loaded:
        return f"{name!r} {'failed to load' if found.configured else 'is not configured'}: {found.error}"
    return None


def select(
    category: str,
    candidates: Sequence[CandidateLike],
    *,
    pin: str | None = None,
    pin_source: str = "the environment pin",
    org_choice: str | None = None,
    default: str | None = None,
) -> Selection:
    """Which plugin of `category` to use. `candidates` in any order; "first" means first by name."""
    by_name = {c.name: c for c in candidates}
    if pin:
        problem = _unusable(by_name, pin)
        if problem:
            return Selection(None, SelectionReason.NONE, (f"{pin_source}={pin}: {category} plugin {problem}",))
        return Selection(pin, SelectionReason.ENV)
    notes: list[str] = []
    for name, reason, label in (
        (org_choice, SelectionReason.ORG, "the organization's choice"),
        (default, SelectionReason.DEFAULT, "the default"),
    ):
        if not name:
            continue
        problem = _unusable(by_name, name)
        if problem is None:
            return Selection(name, reason, tuple(notes))
        notes.append(f"{label} {problem}")
    first = next((c.name for c in sorted(candidates, key=lambda c: c.name) if c.loaded), None)
    if first is not None:
        return Selection(first, SelectionReason.FIRST, tuple(notes))
    notes.append(f"no {category} plugin loaded" if candidates else f"no {category} plugin is installed")
    return Selection(None, SelectionReason.NONE, tuple(notes))
