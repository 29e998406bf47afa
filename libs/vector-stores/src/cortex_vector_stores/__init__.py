"""Vector stores behind the `VectorStore` protocol: pgvector (kb_chunks.embedding) and Qdrant."""
