"""The indexer: consumes `kb.>` events and writes documents and chunks; emits `document.indexed`."""
