"""`[runtime]` of harness.toml as plain data: which engine runs the runs, and where it is.

    [runtime]
    backend = "embedded"            # or "temporal"
    temporal_address = "127.0.0.1:7233"
    namespace = "default"
    task_queue = "harness"
    temporal_tls = false            # true for a real cluster
    temporal_tls_ca = "ca.pem"      # mTLS: the CA of the server's certificate (else the system's)
    temporal_tls_cert = "client.pem"  # mTLS: this client's certificate ...
    temporal_tls_key = "client.key"   # ... and its private key (paths from harness.toml's folder)
    temporal_tls_domain = "temporal.internal"  # the name in the server's certificate
    temporal_history_events = 10000 # a run's workflow continues as new past this

The API key of a Temporal cluster is read from HARNESS_TEMPORAL_API_KEY only, never from
the file, and it is left out of every repr, so that printing or logging the settings never
shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["API_KEY_ENV", "BACKENDS", "Backend", "RuntimeSettings"]

Backend = Literal["embedded", "temporal"]
"""What runs the runs: the embedded runtime (this process and `harness worker`s sharing the
store), or Temporal (a workflow per run, on `harness worker`s polling a task queue)."""

BACKENDS: Final[tuple[Backend, ...]] = ("embedded", "temporal")

API_KEY_ENV: Final = "HARNESS_TEMPORAL_API_KEY"
"""The environment variable that holds the Temporal API key (never the file)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RuntimeSettings:
    """The `[runtime]` table, and the Temporal API key from the environment."""

    backend: Backend = "embedded"
    """`backend`: the engine that runs the runs."""
    temporal_address: str = "127.0.0.1:7233"
    """`temporal_address`: `host:port` of the Temporal frontend (a dev server by default)."""
    namespace: str = "default"
    """`namespace`: the Temporal namespace of the runs' workflows."""
    task_queue: str = "harness"
    """`task_queue`: the queue `harness worker` polls and runs are started on."""
    temporal_tls: bool = False
    """`temporal_tls`: connect with TLS (a real cluster, Temporal Cloud)."""
    temporal_tls_ca: str | None = None
    """`temporal_tls_ca`: a PEM file of the CA that signed the server's certificate (a
    private cluster); the system's roots when unset. An absolute path once loaded."""
    temporal_tls_cert: str | None = None
    """`temporal_tls_cert`: this client's certificate, a PEM file (mutual TLS)."""
    temporal_tls_key: str | None = None
    """`temporal_tls_key`: the private key of `temporal_tls_cert`, a PEM file; its content is
    read when connecting and never shown."""
    temporal_tls_domain: str | None = None
    """`temporal_tls_domain`: the server name its certificate is checked against, when not
    the host of `temporal_address`."""
    temporal_history_events: int = 10_000
    """`temporal_history_events`: a run's workflow continues as new at the first step
    boundary once its Temporal history holds this many events (or when the server suggests
    it), so a long run never reaches the server's limit on one history (51,200 events)."""
    temporal_api_key: str | None = field(default=None, repr=False)
    """From HARNESS_TEMPORAL_API_KEY: the key sent to the cluster; never shown."""

    @property
    def temporal(self) -> bool:
        """Whether runs go to Temporal."""
        return self.backend == "temporal"
