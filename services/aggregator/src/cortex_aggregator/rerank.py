"""A search's best documents reordered by the organization's reranker, best effort.

The reranker is the plugin cascade's choice for the organization: `CORTEX_PLUGIN_RERANKER`, else the
organization's `cortex plugins use --org … reranker NAME`, else `none`; a choice is seen within
`refresh_seconds`. With `none` nothing happens. Otherwise the first `candidates` fused documents are
scored on their title and best passage and put in the reranker's order; the documents after them keep
the fused order, so later pages follow on. A reranker that fails, answers late or answers nonsense leaves
the fused order: the search still answers, and the failure is logged and counted
(`cortex.aggregator.rerank.failures`).
"""

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from opentelemetry import metrics
from opentelemetry.metrics import Counter

from cortex_aggregator.expiring_lru import ExpiringLru
from cortex_plugins import PluginRegistry
from cortex_plugins.builtins.identity_reranker import NAME as IDENTITY
from cortex_plugins.errors import PluginUnavailable
from cortex_plugins.rerankers import Reranker
from cortex_store.models import PluginChoice
from cortex_store.org_reads import OrgReads

log = logging.getLogger(__name__)

CATEGORY = "reranker"
MAX_ORGANIZATIONS = 1024
CHOSEN = f"SELECT plugin FROM {PluginChoice.__tablename__} WHERE organization_id = :org AND category = :category"


class Row(Protocol):
    title: str
    passage: str | None


def passage_text(row: Row | None) -> str:
    """What the reranker reads of a document: its title and the passage the search picked."""
    return "" if row is None else f"{row.title}\n{row.passage or ''}"


@dataclass(frozen=True)
class Reranking:
    """One organization's reranker, with what a search allows it."""

    reranker: Reranker
    candidates: int
    timeout_seconds: float
    failures: Counter

    async def reorder(
        self, query: str, head: Sequence[tuple[uuid.UUID, float]], texts: Sequence[str]
    ) -> list[tuple[uuid.UUID, float]]:
        """`head` in the reranker's order (ties keep their fused order); as it was when the reranker fails."""
        name = self.reranker.name
        try:
            async with asyncio.timeout(self.timeout_seconds):
                scores = _checked(await self.reranker.rerank(query, texts), len(head))
        except Exception as exc:  # noqa: BLE001 - a plugin's failure, whatever it is, must not fail the search
            self.failures.add(1, {"plugin": name, "error": type(exc).__name__})
            log.warning("reranker %s failed, fused order kept: %s: %s", name, type(exc).__name__, exc)
            return list(head)
        order = sorted(range(len(head)), key=lambda i: -scores[i])
        return [head[i] for i in order]


class OrgRerankers:
    def __init__(
        self, registry: PluginRegistry, *, candidates: int, timeout_seconds: float, refresh_seconds: float = 5.0
    ) -> None:
        self.candidates = candidates
        self._registry = registry
        self._timeout = timeout_seconds
        self._chosen: ExpiringLru[uuid.UUID, tuple[Reranking | None]] = ExpiringLru(refresh_seconds, MAX_ORGANIZATIONS)
        self._failures = metrics.get_meter("cortex_aggregator").create_counter(
            "cortex.aggregator.rerank.failures", description="Searches whose reranker failed: fused order kept"
        )

    async def of(self, reads: OrgReads, organization_id: uuid.UUID) -> Reranking | None:
        """The organization's reranking; None for `none`. `reads` is bound to the organization."""
        known = self._chosen.get(organization_id)
        if known is None:
            known = (await self._resolve(reads, organization_id),)
            self._chosen.put(organization_id, known)
        return known[0]

    async def _resolve(self, reads: OrgReads, organization_id: uuid.UUID) -> Reranking | None:
        pinned = self._registry.pin(CATEGORY) is not None
        choice = None if pinned else await reads.fetchval(CHOSEN, {"org": organization_id, "category": CATEGORY})
        try:
            plugin = self._registry.active(CATEGORY, choice)
        except PluginUnavailable as exc:
            log.warning("no reranker for organization %s: %s", organization_id, exc)
            return None
        if not isinstance(plugin, Reranker) or plugin.name == IDENTITY:
            return None
        return Reranking(plugin, self.candidates, self._timeout, self._failures)

    async def aclose(self) -> None:
        """Close the reranker plugins this process loaded (an HTTP reranker's connections)."""
        for loaded in self._registry.plugins(CATEGORY):
            close = getattr(loaded.plugin, "aclose", None)
            if loaded.loaded and close is not None:
                await close()


def _checked(scores: Sequence[float], count: int) -> Sequence[float]:
    if len(scores) != count:
        raise ValueError(f"{len(scores)} scores for {count} passages")
    return scores
