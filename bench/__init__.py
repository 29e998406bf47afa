"""Benchmarks of the real deployment shape: `python -m bench.ingest` and `python -m bench.search`.

Each starts PostgreSQL + NATS (embedded, or DATABASE_URL / NATS_URL), applies the migrations, runs
the services as separate processes, prints a table and writes JSON to bench/results/.
"""
