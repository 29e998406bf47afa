"""Are bulk-loaded rows what the indexer itself would have written?

The same passages go in twice: through the real pipeline (KB events → indexer) and through
bench/dataset.py. Every column of `kb_documents` and `kb_chunks` (but ids, organization, timestamps)
and every BM25 posting must agree; the embeddings must point the same way (the indexer and this
process run the same local model). A column the indexer starts to fill later shows up here as a
difference, instead of leaving the search corpus quietly unrealistic.
"""

import uuid
from typing import Any

import asyncpg
import numpy as np

IGNORED = frozenset(
    {"id", "document_id", "organization_id", "created_at", "updated_at", "last_indexed_at", "changed_xid"}
)
MIN_COSINE = 0.999


def _without_ignored(row: asyncpg.Record) -> dict[str, Any]:
    return {key: value for key, value in dict(row).items() if key not in IGNORED}


def _differences(what: str, indexed: dict[str, Any], loaded: dict[str, Any]) -> list[str]:
    found = []
    for key in sorted(indexed.keys() | loaded.keys()):
        if key == "embedding":
            continue
        if indexed.get(key) != loaded.get(key):
            found.append(f"{what}.{key}: indexer {indexed.get(key)!r:.80} ≠ bench {loaded.get(key)!r:.80}")
    return found


def _array(vector: Any) -> Any:
    return np.asarray(vector.to_list() if hasattr(vector, "to_list") else vector, dtype=np.float64)


def _cosine(a: Any, b: Any) -> float:
    x, y = _array(a), _array(b)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


async def compare_documents(connection: asyncpg.Connection, indexed: uuid.UUID, loaded: uuid.UUID) -> list[str]:
    """Differences between the document the indexer wrote and the one bench/dataset.py wrote."""
    documents = {
        doc_id: await connection.fetchrow("SELECT * FROM kb_documents WHERE id = $1", doc_id)
        for doc_id in (indexed, loaded)
    }
    if documents[indexed] is None or documents[loaded] is None:
        return ["a document to compare is missing"]
    found = _differences("kb_documents", _without_ignored(documents[indexed]), _without_ignored(documents[loaded]))
    chunks = {
        doc_id: await connection.fetch("SELECT * FROM kb_chunks WHERE document_id = $1 ORDER BY ordinal", doc_id)
        for doc_id in (indexed, loaded)
    }
    if len(chunks[indexed]) != len(chunks[loaded]):
        return [*found, f"kb_chunks: indexer wrote {len(chunks[indexed])} chunks, bench {len(chunks[loaded])}"]
    for ours, theirs in zip(chunks[indexed], chunks[loaded], strict=True):
        found += _differences(f"kb_chunks[{ours['ordinal']}]", _without_ignored(ours), _without_ignored(theirs))
        if (ours["embedding"] is None) != (theirs["embedding"] is None):
            found.append(f"kb_chunks[{ours['ordinal']}].embedding: present in one only")
        elif ours["embedding"] is not None and _cosine(ours["embedding"], theirs["embedding"]) < MIN_COSINE:
            cosine = _cosine(ours["embedding"], theirs["embedding"])
            found.append(f"kb_chunks[{ours['ordinal']}].embedding: cosine {cosine:.4f} between the two")
    postings = {
        doc_id: [
            tuple(row)
            for row in await connection.fetch(
                "SELECT lexeme, tf, document_tokens FROM kb_postings WHERE document_id = $1 ORDER BY 1, 2, 3", doc_id
            )
        ]
        for doc_id in (indexed, loaded)
    }
    if postings[indexed] != postings[loaded]:
        only_indexer = sorted(set(postings[indexed]) - set(postings[loaded]))[:5]
        only_bench = sorted(set(postings[loaded]) - set(postings[indexed]))[:5]
        found.append(f"kb_postings differ: only from the indexer {only_indexer}, only from the bench {only_bench}")
    return found
