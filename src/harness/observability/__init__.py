"""Observability: what runs did, from the event bus and the store; no lower layer imports it."""
