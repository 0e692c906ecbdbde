"""Connecting to Temporal, and the verbs on a run's workflow (workflow id = run id)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError, TLSConfig

from harness.errors import ConfigError, RunError

from .workflow import WORKFLOW

__all__ = ["RunClient", "TLSFiles", "connect"]


@dataclass(frozen=True, kw_only=True, slots=True)
class TLSFiles:
    """What a client presents and trusts over TLS, as the files' bytes (PEM)."""

    ca: bytes | None = None
    """The CA of the server's certificate; the system's roots when `None`."""
    cert: bytes | None = None
    """The client's certificate (mutual TLS)."""
    key: bytes | None = field(default=None, repr=False)
    """Its private key; never shown."""
    domain: str | None = None
    """The name the server's certificate is checked against, when not the address's host."""


async def connect(
    address: str,
    *,
    namespace: str = "default",
    tls: bool | TLSFiles = False,
    api_key: str | None = None,
    timeout_s: float = 10.0,
) -> Client:
    """A client of the Temporal service at `address` (`host:port`).

    Args:
        address: `host:port`.
        namespace: The namespace, which must exist.
        tls: `True` for TLS with the system's roots; `TLSFiles` for a private CA, a client
            certificate (mutual TLS) or another server name.
        api_key: A Temporal Cloud API key.
        timeout_s: How long connecting may take.

    Raises:
        ConfigError: It cannot be reached, or the namespace does not exist; the message
            names the address and the namespace (never the API key).
    """
    try:
        async with asyncio.timeout(timeout_s):
            client = await Client.connect(
                address,
                namespace=namespace,
                tls=_tls_config(tls),
                api_key=api_key,
            )
            await client.workflow_service.describe_namespace(_describe(namespace))
    except (TimeoutError, RuntimeError, RPCError, OSError) as exc:
        raise ConfigError(
            f"cannot reach Temporal at {address} (namespace {namespace!r}): {_reason(exc)}; "
            "start one with `harness temporal dev`, or set [runtime] temporal_address "
            "(HARNESS_RUNTIME__TEMPORAL_ADDRESS) to a reachable server"
        ) from None
    return client


def _tls_config(tls: bool | TLSFiles) -> TLSConfig | bool:
    if isinstance(tls, TLSFiles):
        return TLSConfig(
            server_root_ca_cert=tls.ca,
            domain=tls.domain,
            client_cert=tls.cert,
            client_private_key=tls.key,
        )
    return TLSConfig() if tls else False


def _describe(namespace: str) -> Any:
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest

    return DescribeNamespaceRequest(namespace=namespace)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class RunClient:
    """The workflow verbs of harness runs on one task queue.

    Args:
        client: A connected client.
        task_queue: Where the workers of these runs listen.
        heartbeat_s: The heartbeat timeout of the runs' model and tool calls: a dead
            worker's call is given up (and run again, or reported as of unknown outcome)
            after this long.
        history_events: A run's workflow continues as new at a step boundary once its
            history holds this many events.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        heartbeat_s: float = 5.0,
        history_events: int = 10_000,
    ) -> None:
        self.client, self.task_queue, self.heartbeat_s = client, task_queue, heartbeat_s
        self.history_events = history_events

    async def start(self, run_id: str) -> None:
        """Start the run's workflow; a second start of the same run does nothing."""
        try:
            await self.client.start_workflow(
                WORKFLOW,
                {
                    "run_id": run_id,
                    "heartbeat_s": self.heartbeat_s,
                    "history_events": self.history_events,
                },
                id=run_id,
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            )
        except RPCError as exc:
            raise RunError(f"cannot start the workflow of run {run_id}: {exc}") from None
        except Exception as exc:  # WorkflowAlreadyStartedError: started before
            if type(exc).__name__ != "WorkflowAlreadyStartedError":
                raise

    def _handle(self, run_id: str) -> WorkflowHandle[Any, Any]:
        return self.client.get_workflow_handle(run_id)

    async def pause(self, run_id: str) -> None:
        """Signal `pause`."""
        await self._signal(run_id, "pause")

    async def mail(self, run_id: str) -> None:
        """Signal `mail`: the run's inbox holds a message."""
        await self._signal(run_id, "mail")

    async def resume(self, run_id: str) -> None:
        """Signal `resume`."""
        await self._signal(run_id, "resume")

    async def cancel(self, run_id: str, *, by: str | None, reason: str | None) -> None:
        """Say who cancels (signal `cancelling`), then cancel the workflow."""
        await self._signal(run_id, "cancelling", {"by": by, "reason": reason})
        try:
            await self._handle(run_id).cancel()
        except RPCError as exc:
            raise RunError(f"cannot cancel run {run_id}: {exc}") from None

    async def decide(
        self, run_id: str, call_id: str, *, approved: bool, by: str, reason: str | None
    ) -> None:
        """Deliver a decision on a call (update `decide`)."""
        decision = {"call_id": call_id, "approved": approved, "by": by, "reason": reason}
        try:
            handle = self._handle(run_id)
            await handle.execute_update("decide", decision)  # pyright: ignore[reportUnknownMemberType]
        except (RPCError, WorkflowUpdateFailedError) as exc:
            raise RunError(
                f"cannot deliver the decision on {call_id} to run {run_id}: {exc}"
            ) from None

    async def state(self, run_id: str) -> dict[str, Any]:
        """Query `state`: state, paused, next_seq, pending_approvals."""
        return await self._handle(run_id).query("state")

    async def running(self, run_id: str) -> bool:
        """Whether the run's workflow is still running."""
        described = await self._handle(run_id).describe()
        return described.status == WorkflowExecutionStatus.RUNNING

    async def _signal(self, run_id: str, name: str, *args: Any) -> None:
        try:
            await self._handle(run_id).signal(name, *args)
        except RPCError as exc:
            raise RunError(f"cannot send {name} to run {run_id}: {exc}") from None
