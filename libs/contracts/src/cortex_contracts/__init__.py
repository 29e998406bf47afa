"""The wire between Cortex services: what travels over NATS and what the API returns.

Every model forbids unknown fields and new fields are only ever optional, so messages written by an
older producer stay valid for newer consumers.
"""
