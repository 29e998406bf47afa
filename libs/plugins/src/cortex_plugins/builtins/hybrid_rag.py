"""rag `hybrid` (the default): describes the built-in pipeline; the pipeline itself runs in the services.

Ingest is the indexer's (extract by media type → heading/paragraph chunks → embed → PostgreSQL), retrieve
is the aggregator's (BM25 over postings + dense cosine, fused by reciprocal rank). This object tells a
listing what the pipeline accepts; it does not run it.
"""

from cortex_extractors import supported_media_types


class HybridRag:
    name = "hybrid"
    description = "ingest: extractor → chunker → embedder → store (indexer); retrieve: BM25 + dense, RRF (aggregator)"

    @property
    def supported_doc_types(self) -> frozenset[str]:
        """Media types ingest reads: whatever the loaded extractors cover."""
        return supported_media_types()

    async def health(self) -> str | None:
        return None if self.supported_doc_types else "no extractor loaded: nothing can be ingested"


def create() -> HybridRag:
    return HybridRag()
