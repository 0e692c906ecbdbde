"""Observability: what runs did and cost, from the event bus and the store.

Subscribers of the event bus keep metrics and traces as runs go; readers of the store
(`cost`, `stats`) answer for every past run from any process. Nothing below the runtime
imports this package: the runtime and the command line use it. Each module loads its
third-party library only when imported: importing `harness` loads none.
"""
