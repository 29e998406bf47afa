"""How Cortex services talk over NATS: JetStream for events, core request/reply for queries."""
