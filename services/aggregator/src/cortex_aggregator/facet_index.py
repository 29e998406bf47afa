"""One organization's live documents as columns, for exact disjunctive facet counts and the filtered feed.

Each document has a slot; per slot numpy arrays hold its class, Work, source and status as small codes
(dictionaries that only grow), updated_at in microseconds and its id as two 64-bit halves; its tags
are (slot, tag code) pairs, appended when written and blanked when replaced (slot 0 is never live and
takes blanked pairs), compacted when half are blank. A filter is a boolean mask over the slots (a code
lookup table indexed by the column), a facet's counts a `bincount` of its column over the rows every
other filter passes. Missions and Teams are counted from the Works: a document has one Work, a Work
one Mission, and team_resources one row per Team and Work.

No I/O here: `facet_indexes` feeds rows in and keeps them current. Nothing awaits inside a method, so
a caller on the event loop sees one consistent state.
"""

import uuid
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from cortex_aggregator.facet_catalog import Catalog
from cortex_aggregator.filters import active_values
from cortex_contracts.rpc import FeedFilters

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
LOW_64 = (1 << 64) - 1
MIN_COMPACT_PAIRS = 4096

WITHIN = ""  # the key of the restriction to given documents among the filter masks (no facet's name)

K = TypeVar("K", bound=Hashable)
Mask = NDArray[np.bool_]


def to_micros(moment: datetime) -> int:
    return (moment - EPOCH) // MICROSECOND


def from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


class Codes(Generic[K]):
    """A dictionary that only grows: value -> small int, and back. Code 0 is None where `none_first`."""

    def __init__(self, *, none_first: bool) -> None:
        self.values: list[K | None] = [None] if none_first else []
        self._codes: dict[K | None, int] = {None: 0} if none_first else {}

    def __len__(self) -> int:
        return len(self.values)

    def code(self, value: K | None) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self.values)
            self.values.append(value)
        return found

    def get(self, value: K) -> int | None:
        return self._codes.get(value)

    def lookup(self, values: Iterable[K]) -> Mask:
        """A table over the codes: True for these values (those never seen have no code and match nothing)."""
        table = np.zeros(max(1, len(self.values)), dtype=np.bool_)  # slot 0 has code 0, even with no values
        table[[code for value in values if (code := self._codes.get(value)) is not None]] = True
        return table


@dataclass(frozen=True)
class Counted:
    """A facet's non-zero counts: (value, label for ordering, count); the label None for catalog values."""

    facet: str
    values: list[tuple[str, str | None, int]]


@dataclass(frozen=True)
class Key:
    """A position in the feed's order (updated_at, id), newest first."""

    updated: int  # microseconds since the epoch
    id: uuid.UUID


class OrgIndex:
    def __init__(self) -> None:
        self.classes: Codes[str] = Codes(none_first=True)
        self.works: Codes[uuid.UUID] = Codes(none_first=True)
        self.sources: Codes[str] = Codes(none_first=False)
        self.statuses: Codes[str] = Codes(none_first=False)
        self.tags: Codes[str] = Codes(none_first=False)
        self.catalog = Catalog()
        # Ids as 128-bit ints, which the garbage collector does not track: 100k UUID objects made every
        # full collection of the process take ~40 ms.
        self._slots: dict[int, int] = {}
        self._used = 1  # slot 0: never live
        self._live = np.zeros(0, dtype=np.bool_)
        self._class = np.zeros(0, dtype=np.int32)
        self._work = np.zeros(0, dtype=np.int32)
        self._source = np.zeros(0, dtype=np.int32)
        self._status = np.zeros(0, dtype=np.int32)
        self._updated = np.zeros(0, dtype=np.int64)
        self._id_high = np.zeros(0, dtype=np.uint64)
        self._id_low = np.zeros(0, dtype=np.uint64)
        self._tag_start = np.zeros(0, dtype=np.int64)
        self._tag_count = np.zeros(0, dtype=np.int32)
        self._pair_slot = np.zeros(0, dtype=np.int32)
        self._pair_tag = np.zeros(0, dtype=np.int32)
        self._pairs = 0
        self._blank_pairs = 0
        self._by_id_for = -1  # `_used` when `_by_id` was sorted
        self._by_id: tuple[NDArray[np.intp], NDArray[np.uint64], NDArray[np.uint64]] = (
            np.zeros(0, dtype=np.intp),
            np.zeros(0, dtype=np.uint64),
            np.zeros(0, dtype=np.uint64),
        )
        self._links_for: tuple[int, int] | None = None
        self._links_cache: dict[str, _Links] = {}
        self._reserve(1024, 4096)

    @property
    def documents(self) -> int:
        return int(self._live[: self._used].sum())

    # ---------------------------------------------------------------------------------------- writes

    def _reserve(self, slots: int, pairs: int) -> None:
        if slots > len(self._live):
            size = max(slots, 2 * len(self._live))
            for name in ("_live", "_class", "_work", "_source", "_status", "_updated", "_id_high", "_id_low"):
                setattr(self, name, _grown(getattr(self, name), size))
            self._tag_start = _grown(self._tag_start, size)
            self._tag_count = _grown(self._tag_count, size)
        if pairs > len(self._pair_slot):
            size = max(pairs, 2 * len(self._pair_slot))
            self._pair_slot = _grown(self._pair_slot, size)
            self._pair_tag = _grown(self._pair_tag, size)

    def apply(self, rows: Sequence[Any]) -> None:
        """Store these document rows as they now are (id, doc_class, work_id, source, status, tags,
        updated_us, deleted): a row already stored is replaced, a deleted one leaves the counts."""
        self._reserve(self._used + len(rows), self._pairs + sum(len(row["tags"] or ()) for row in rows))
        batch = _Batch()
        for row in rows:
            doc_id = row["id"].int
            slot = self._slots.get(doc_id)
            if slot is not None:
                self._blank_tags(slot)
            if row["deleted"]:
                if slot is not None:
                    batch.gone.append(slot)
                continue
            if slot is None:
                slot = self._slots[doc_id] = self._used
                self._used += 1
                batch.new_slots.append(slot)
                batch.new_ids.append(doc_id)
            tags = [self.tags.code(tag) for tag in dict.fromkeys(row["tags"] or ())]
            batch.slots.append(slot)
            batch.columns.append(
                (
                    self.classes.code(row["doc_class"]),
                    self.works.code(row["work_id"]),
                    self.sources.code(row["source"]),
                    self.statuses.code(row["status"]),
                    row["updated_us"],
                    self._pairs + len(batch.pair_tags),
                    len(tags),
                )
            )
            batch.pair_slots += [slot] * len(tags)
            batch.pair_tags += tags
        self._store(batch)
        if self._blank_pairs > max(MIN_COMPACT_PAIRS, self._pairs // 2):
            self._compact_pairs()

    def _blank_tags(self, slot: int) -> None:
        count = int(self._tag_count[slot])
        if count:
            start = int(self._tag_start[slot])
            self._pair_slot[start : start + count] = 0
            self._tag_count[slot] = 0
            self._blank_pairs += count

    def _store(self, batch: "_Batch") -> None:
        if batch.gone:
            self._live[batch.gone] = False
        if batch.new_slots:
            self._id_high[batch.new_slots] = np.array([value >> 64 for value in batch.new_ids], dtype=np.uint64)
            self._id_low[batch.new_slots] = np.array([value & LOW_64 for value in batch.new_ids], dtype=np.uint64)
        if batch.slots:
            slots, columns = batch.slots, list(zip(*batch.columns, strict=True))
            self._live[slots] = True
            arrays: tuple[NDArray[Any], ...] = (
                self._class,
                self._work,
                self._source,
                self._status,
                self._updated,
                self._tag_start,
                self._tag_count,
            )
            for array, values in zip(arrays, columns, strict=True):
                array[slots] = values
        end = self._pairs + len(batch.pair_tags)
        self._pair_slot[self._pairs : end] = batch.pair_slots
        self._pair_tag[self._pairs : end] = batch.pair_tags
        self._pairs = end

    def _compact_pairs(self) -> None:
        kept = self._pair_slot[: self._pairs] != 0
        position = np.cumsum(kept) - 1  # where each kept pair moves
        tagged = np.flatnonzero(self._tag_count[: self._used])
        self._tag_start[tagged] = position[self._tag_start[tagged]]
        count = int(kept.sum())
        self._pair_slot[:count] = self._pair_slot[: self._pairs][kept]
        self._pair_tag[:count] = self._pair_tag[: self._pairs][kept]
        self._pairs, self._blank_pairs = count, 0

    # ----------------------------------------------------------------------------------------- reads

    def _masks(self, filters: FeedFilters) -> dict[str, Mask]:
        """Per active filter, the slots that pass it (OR within the facet)."""
        used, catalog = self._used, self.catalog
        masks: dict[str, Mask] = {}
        for facet, values in active_values(filters).items():
            if facet == "type":
                masks[facet] = _matching(self._class[:used], self.classes, values)
            elif facet == "source":
                masks[facet] = _matching(self._source[:used], self.sources, values)
            elif facet == "status":
                masks[facet] = _matching(self._status[:used], self.statuses, values)
            elif facet == "tag":
                pairs = slice(0, self._pairs)
                mask = np.zeros(used, dtype=np.bool_)
                mask[self._pair_slot[pairs][_matching(self._pair_tag[pairs], self.tags, values)]] = True
                masks[facet] = mask
            else:
                ids = {uuid.UUID(value) for value in values}
                if facet == "mission":
                    ids = catalog.works_in_missions(ids)
                elif facet == "team":
                    ids = catalog.works_of_teams(ids)
                masks[facet] = _matching(self._work[:used], self.works, ids)
        return masks

    def _passing(self, masks: dict[str, Mask], except_facet: str | None = None) -> Mask:
        rows = self._live[: self._used].copy()
        for facet, mask in masks.items():
            if facet != except_facet:
                rows &= mask
        return rows

    def slots_of(self, ids: Iterable[uuid.UUID]) -> Mask:
        """The slots of these documents (those the index holds)."""
        mask = np.zeros(self._used, dtype=np.bool_)
        slots = self._slots
        mask[[slot for doc_id in ids if (slot := slots.get(doc_id.int)) is not None]] = True
        return mask

    def slots_of_halves(self, high: NDArray[np.uint64], low: NDArray[np.uint64]) -> Mask:
        """The slots of the documents with these ids (as their two halves; those the index holds), found in
        numpy: at 100k documents, ids looked up one by one cost ~15 ms."""
        order, by_high, by_low = self._ids_sorted()
        mask = np.zeros(self._used, dtype=np.bool_)
        at = np.minimum(np.searchsorted(by_high, high), len(order) - 1)  # the first slot with that high half
        found = (by_high[at] == high) & (by_low[at] == low)
        mask[order[at[found]]] = True
        # An id whose high half it shares with another's (ids an upstream made so, say) is looked up alone.
        shared = ~found & (by_high[at] == high)
        for h, lo in zip(high[shared].tolist(), low[shared].tolist(), strict=True):
            if (slot := self._slots.get(h << 64 | lo)) is not None:
                mask[slot] = True
        return mask

    def _ids_sorted(self) -> tuple[NDArray[np.intp], NDArray[np.uint64], NDArray[np.uint64]]:
        """The slots ordered by id, with their ids' halves in that order; kept until a slot is added (a
        slot's id never changes)."""
        if self._by_id_for != self._used:
            high, low = self._id_high[: self._used], self._id_low[: self._used]
            order = np.lexsort((low, high))
            self._by_id = (order, high[order], low[order])
            self._by_id_for = self._used
        return self._by_id

    def count(self, filters: FeedFilters, facets: Sequence[str], within: Mask | None = None) -> dict[str, Counted]:
        """Each facet's counts over the documents that pass every active filter but its own (and are `within`
        these slots, when given)."""
        masks = self._masks(filters)
        if within is not None:
            masks[WITHIN] = within  # a filter no facet owns: every facet honours it
        passing: dict[str | None, Mask] = {}
        per_work: dict[str | None, NDArray[np.int64]] = {}
        counted: dict[str, Counted] = {}
        for facet in facets:
            key = facet if facet in masks else None  # facets without a filter of their own share their rows
            if key not in passing:
                passing[key] = self._passing(masks, key)
            rows = passing[key]
            if facet == "tag":
                counted[facet] = _counted(facet, self.tags.values, self._tag_counts(rows))
            elif facet in ("type", "source", "status"):
                codes, column = {
                    "type": (self.classes, self._class),
                    "source": (self.sources, self._source),
                    "status": (self.statuses, self._status),
                }[facet]
                found = np.bincount(column[: self._used][rows], minlength=len(codes))
                counted[facet] = _counted(facet, codes.values, found)
            else:
                if key not in per_work:
                    per_work[key] = np.bincount(self._work[: self._used][rows], minlength=len(self.works))
                counted[facet] = self._catalog_counts(facet, per_work[key])
        return counted

    def _tag_counts(self, rows: Mask) -> NDArray[np.int64]:
        """Documents per tag among `rows`: from those documents' own pairs when they are few, else from
        every pair."""
        slots = np.flatnonzero(rows)
        if 4 * len(slots) > self._used:
            pairs = slice(0, self._pairs)
            return np.bincount(self._pair_tag[pairs][rows[self._pair_slot[pairs]]], minlength=len(self.tags))
        counts = self._tag_count[slots].astype(np.int64)
        first = np.cumsum(counts) - counts  # where each document's pairs begin in the gathered list
        positions = np.repeat(self._tag_start[slots] - first, counts) + np.arange(int(counts.sum()))
        return np.bincount(self._pair_tag[positions], minlength=len(self.tags))

    def _catalog_counts(self, facet: str, per_work: NDArray[np.int64]) -> Counted:
        """Work, Mission and Team counts from the documents counted per Work. Every Work a document names
        counts, as the Work filter matches it, even one the catalog does not hold (not yet, or no longer: its
        label is then its id); Missions and Teams are the catalog's live ones."""
        links = self._links()[facet]
        totals = np.bincount(links.targets, weights=per_work[links.works], minlength=len(links.keys))
        return Counted(facet, [(links.keys[i], links.labels[i], int(totals[i])) for i in totals.nonzero()[0]])

    def _links(self) -> dict[str, "_Links"]:
        """Per catalog facet, which Work codes count towards which value (cached until the catalog or the
        Work codes change)."""
        if self._links_for != (id(self.catalog), len(self.works)):
            catalog = self.catalog
            pairs = {
                "work": [(work, work) for work in self.works.values if work is not None],
                "mission": [(work, m) for work, (_, m) in catalog.works.items() if m in catalog.missions],
                "team": [(work, team) for work, team in catalog.owners if team in catalog.teams],
            }
            self._links_cache = {facet: self._linked(facet, found) for facet, found in pairs.items()}
            self._links_for = (id(self.catalog), len(self.works))
        return self._links_cache

    def _linked(self, facet: str, pairs: list[tuple[uuid.UUID, uuid.UUID]]) -> "_Links":
        keys = list(dict.fromkeys(value for work, value in pairs if self.works.get(work) is not None))
        target = {key: n for n, key in enumerate(keys)}
        known = [(code, target[value]) for work, value in pairs if (code := self.works.get(work)) is not None]
        return _Links(
            keys=[str(key) for key in keys],
            labels=[self.catalog.label(facet, key) for key in keys],
            works=np.array([code for code, _ in known], dtype=np.int64),
            targets=np.array([t for _, t in known], dtype=np.int64),
        )

    def newest(self, filters: FeedFilters, after: Key | None, n: int) -> list[Key]:
        """Up to `n` documents passing every filter, newest first by (updated_at, id), after `after`."""
        used = self._used
        rows = self._passing(self._masks(filters))
        updated, high, low = self._updated[:used], self._id_high[:used], self._id_low[:used]
        if after is not None:
            at, after_high, after_low = after.updated, after.id.int >> 64, after.id.int & LOW_64
            rows &= (updated < at) | (
                (updated == at) & ((high < after_high) | ((high == after_high) & (low < after_low)))
            )
        candidates = np.flatnonzero(rows)
        if len(candidates) > n:  # keep the newest n (and any tied with the n-th), then order those
            keys = updated[candidates]
            nth = np.partition(keys, len(keys) - n)[len(keys) - n]
            candidates = candidates[keys >= nth]
        order = candidates[np.lexsort((low[candidates], high[candidates], updated[candidates]))[::-1][:n]]
        return [Key(int(updated[s]), uuid.UUID(int=(int(high[s]) << 64) | int(low[s]))) for s in order]


@dataclass(frozen=True)
class _Links:
    keys: list[str]  # the facet's values (Work, Mission or Team ids)
    labels: list[str | None]
    works: NDArray[np.int64]  # per link, a Work code...
    targets: NDArray[np.int64]  # ...and the value (index into keys) it counts towards


@dataclass
class _Batch:
    """What one `apply` writes to the arrays, gathered row by row."""

    slots: list[int] = field(default_factory=list)
    columns: list[tuple[int, int, int, int, int, int, int]] = field(default_factory=list)
    new_slots: list[int] = field(default_factory=list)
    new_ids: list[int] = field(default_factory=list)  # as 128-bit integers
    gone: list[int] = field(default_factory=list)
    pair_slots: list[int] = field(default_factory=list)
    pair_tags: list[int] = field(default_factory=list)


def _matching(column: NDArray[Any], codes: Codes[Any], values: Iterable[Any]) -> Mask:
    """Where `column` holds one of these values: equality tests for a few, a table lookup for more."""
    wanted = [code for value in values if (code := codes.get(value)) is not None]
    if len(wanted) > 3:
        looked_up: Mask = codes.lookup(values)[column]
        return looked_up
    mask = np.zeros(len(column), dtype=np.bool_)
    for code in wanted:
        mask |= column == code
    return mask


def _grown(array: NDArray[Any], size: int) -> NDArray[Any]:
    grown = np.zeros(size, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def _counted(facet: str, values: Sequence[str | None], counts: NDArray[np.int64]) -> Counted:
    found = [(values[int(code)], int(counts[code])) for code in counts.nonzero()[0]]
    return Counted(facet, [(value, value, n) for value, n in found if value is not None])
