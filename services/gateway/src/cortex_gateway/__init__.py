"""The gateway: Cortex's HTTP API. Reads the database only to authenticate; everything else goes over NATS."""
