"""Observability: metrics (and traces) of runs, kept by subscribers of the event bus.

Nothing below the runtime imports this package; the runtime and the CLI attach it. Each
module loads its third-party library only when imported: importing `harness` loads none.
"""
