"""Cortex's PostgreSQL schema. Each table has one writing service; the others only read it."""
