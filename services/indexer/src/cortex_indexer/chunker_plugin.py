"""chunker `heading-paragraph` (the default), registered as a `cortex.chunker` entry point: the indexer's
heading- and paragraph-aware, token-bounded, overlapping chunking (`chunking.chunk_document`)."""

from cortex_indexer.chunking import MAX_WORDS, OVERLAP_WORDS, Chunk, chunk_document


class HeadingParagraphChunker:
    name = "heading-paragraph"
    max_words = MAX_WORDS
    overlap_words = OVERLAP_WORDS

    def chunk(self, title: str, body: str) -> list[Chunk]:
        return chunk_document(title, body)


def create() -> HeadingParagraphChunker:
    return HeadingParagraphChunker()
