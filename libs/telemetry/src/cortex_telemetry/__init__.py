"""Tracing and logging set-up, called once by each service's bootstrap."""
