"""The in-memory facet index against a plain model: after any sequence of writes (new documents,
rewrites with other values and tags, deletions, resurrections), its disjunctive counts and its
newest-first pages equal what the model computes. Tag pairs are compacted often (the threshold is
lowered), so blanked and moved pairs are exercised too; filters of one to five values take both ways
of testing a column (equality, table lookup). Counts restricted to a set of documents (those a search
text matched) equal the model's over those documents."""

import uuid
from collections import Counter
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_aggregator import facet_index
from cortex_aggregator.facet_catalog import Catalog
from cortex_aggregator.facet_index import Key, OrgIndex
from cortex_contracts.rpc import FeedFilters

# Ids that tie on their high half or differ in their top bit (stored as unsigned 64-bit halves).
IDS = [uuid.UUID(int=((n % 3) << 126 | (n % 2) << 64 | n)) for n in range(1, 25)]
WORKS = [uuid.UUID(int=1000 + n) for n in range(4)]
MISSIONS = [uuid.UUID(int=2000 + n) for n in range(2)]
TEAMS = [uuid.UUID(int=3000 + n) for n in range(2)]
CATALOG = Catalog(
    works={WORKS[0]: ("W0", MISSIONS[0]), WORKS[1]: ("W1", MISSIONS[1]), WORKS[2]: ("W2", None)},  # W3: unknown
    missions={MISSIONS[0]: "M0"},  # M1 is not live: its Work still matches its filter, it is never counted
    teams={TEAMS[0]: "T0"},
    owners=((WORKS[0], TEAMS[0]), (WORKS[1], TEAMS[0]), (WORKS[1], TEAMS[1])),
)
CLASSES = ["spec", "faq", None]
TAGS = ["a", "b", "c", "d"]

rows = st.fixed_dictionaries(
    {
        "id": st.sampled_from(IDS),
        "doc_class": st.sampled_from(CLASSES),
        "work_id": st.sampled_from([*WORKS, None]),
        "source": st.sampled_from(["kb", "note"]),
        "status": st.sampled_from(["draft", "published"]),
        "tags": st.lists(st.sampled_from(TAGS), max_size=3),
        "updated_us": st.integers(0, 5),  # few values: many ties, ordered by id
        "deleted": st.booleans(),
    }
)
filters = st.fixed_dictionaries(
    {
        "type": st.lists(st.sampled_from(["spec", "faq", "none-has-it", "nor-this"]), max_size=4),
        "work": st.lists(st.sampled_from(WORKS), max_size=2),
        "mission": st.lists(st.sampled_from(MISSIONS), max_size=1),
        "team": st.lists(st.sampled_from(TEAMS), max_size=1),
        "source": st.lists(st.sampled_from(["kb", "note"]), max_size=1),
        "status": st.lists(st.sampled_from(["draft", "published"]), max_size=1),
        "tag": st.lists(st.sampled_from([*TAGS, "z"]), max_size=5),
    }
)


def _values(facet: str, doc: dict[str, Any], *, counting: bool) -> set[Any]:
    work = doc["work_id"]
    mission = CATALOG.works[work][1] if work in CATALOG.works else None
    teams = {team for w, team in CATALOG.owners if w == work}
    if facet == "type":
        return {doc["doc_class"]} - {None}
    if facet == "work":
        return {work} - {None}  # counted whether the catalog holds the Work or not, as the filter matches it
    if facet == "mission":
        return ({mission} & set(CATALOG.missions)) if counting else ({mission} - {None})
    if facet == "team":
        return (teams & set(CATALOG.teams)) if counting else teams
    if facet == "tag":
        return set(doc["tags"])
    return {doc[facet]}


def _passes(doc: dict[str, Any], chosen: dict[str, list[Any]], except_facet: str | None = None) -> bool:
    return all(
        _values(facet, doc, counting=False) & set(wanted)
        for facet, wanted in chosen.items()
        if wanted and facet != except_facet
    )


# The documents a search text matched (facets with `q`): any, including ones the index never held.
searched = st.none() | st.sets(st.sampled_from([*IDS, uuid.UUID(int=99)]))


@settings(max_examples=300, deadline=None)
@given(
    batches=st.lists(st.lists(rows, max_size=8), max_size=8), chosen=filters, limit=st.integers(1, 7), within=searched
)
def test_counts_and_pages_equal_the_model(
    batches: list[list[dict[str, Any]]], chosen: dict[str, Any], limit: int, within: set[uuid.UUID] | None
) -> None:
    index, model = OrgIndex(), dict[uuid.UUID, dict[str, Any]]()
    index.catalog = CATALOG
    with mock.patch.object(facet_index, "MIN_COMPACT_PAIRS", 2):
        for batch in batches:
            latest = {row["id"]: row for row in batch}  # a statement returns one row per document
            index.apply(list(latest.values()))
            for doc_id, row in latest.items():
                if row["deleted"]:
                    model.pop(doc_id, None)
                else:
                    model[doc_id] = row
    request = FeedFilters.model_validate(chosen)
    facets = ("type", "work", "mission", "team", "source", "status", "tag")
    if within is not None:  # the two ways of finding documents' slots agree, ids sharing a high half too
        halves = [(doc_id.int >> 64, doc_id.int & (1 << 64) - 1) for doc_id in within]
        high, low = (np.array([half[i] for half in halves], dtype=np.uint64) for i in (0, 1))
        assert (index.slots_of_halves(high, low) == index.slots_of(within)).all()
    counted = index.count(request, facets, None if within is None else index.slots_of(within))
    for facet in facets:
        expected: Counter[str] = Counter()
        for doc_id, doc in model.items():
            if _passes(doc, chosen, except_facet=facet) and (within is None or doc_id in within):
                expected.update(str(value) for value in _values(facet, doc, counting=True))
        assert {value: n for value, _, n in counted[facet].values} == dict(expected), facet

    matching = sorted(
        (Key(doc["updated_us"], doc_id) for doc_id, doc in model.items() if _passes(doc, chosen)),
        key=lambda key: (key.updated, key.id),
        reverse=True,
    )
    paged: list[Key] = []
    after = None
    for _ in range(len(matching) + 1):
        page = index.newest(request, after, limit)
        paged += page
        if len(page) < limit:
            break
        after = page[-1]
    assert paged == matching
    assert index.documents == len(model)
