"""Built-in plugins that have no other home: the local embedder, the identity reranker, the extractive
summarizer, and descriptions of the built-in hybrid RAG pipeline and PostgreSQL memory."""
