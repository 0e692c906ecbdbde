"""Observability: what runs cost and did, read from the store and the event bus.

`cost` reads past runs from the store (`harness cost`). Nothing below the runtime imports
this package: the runtime and the command line use it.
"""
