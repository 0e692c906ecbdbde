"""The activities of `harness.run`: what does I/O, on a worker, at least once.

- `harness.load_run(run_id)` (a local activity): where the run left off in the store
  (`WorkerHost.load`).
- `harness.model_call({run_id, key, writes, request, heartbeat_s})`: writes the batches it
  carries, then calls the agent's model (resolved on the worker from its profile: the
  gateway's retries and fallbacks happen here) and returns the response with its notices.
- `harness.tool_call({run_id, key, writes, call, heartbeat_s})`: writes the batches, then
  runs the real `Toolset.execute` (validation, timeout, truncation) and returns the outcome.
- `harness.record({run_id, writes})` (a local activity): writes the batches.
- `harness.hand_over({key, target})` (a local activity): builds a handoff's target on the
  worker (`WorkerHost.hand_over`): `{refused}` (the tool message), or the run's new agent
  `{key, model, count, tools}`; it writes nothing.
- `harness.start_child({run_id, key, agent, task, call_id})` (a local activity): the row
  of an agent-tool call's child run, made unless it exists (`WorkerHost.start_child`); the
  workflow then starts the child's workflow as its own child.
- `harness.child_ended({run_id, child_run_id})` (a local activity): the ended child's
  answer and usage, and the roll-up of the run's children (`WorkerHost.child_ended`).
- `harness.inbox({run_id})` (a local activity): the run's messages not delivered yet.
- `harness.send({run_id, agent, to, content, call_id})` (a local activity): a message
  kept in run `to`'s inbox, keyed by the call (sent once).

Every write is keyed (`StepWrite.key`), so an activity run again writes nothing twice; a
batch whose events the store numbers otherwise than the workflow did fails the activity.
The long ones heartbeat, so a cancelled workflow stops them and a dead worker is seen.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from harness.agent.handoff import HandoffRefused
from harness.agent.verify import ShellVerifier, VerifyContext, run_verifier
from harness.core.codec import message_from_dict
from harness.core.events import ModelFallback, ModelRetry
from harness.core.messages import ToolCall
from harness.distributed.host import AgentKey, WorkerHost
from harness.errors import HarnessError, StoreConflict, StoreError
from harness.gateway.model import ModelRequest
from harness.tools.context import ToolContext

from ._wire import batch_step, request_from_dict, response_to_dict, tool_to_dict

__all__ = ["Activities"]

T = TypeVar("T")


class Activities:
    """The activities of one worker, over its runtime (`WorkerHost`).

    Args:
        host: The runtime's side: the store, the agents, their models and tools.
    """

    def __init__(self, host: WorkerHost) -> None:
        self._host = host

    def all(self) -> list[Any]:
        """The activity functions, for a `Worker`."""
        return [
            self.load_run,
            self.model_call,
            self.tool_call,
            self.record,
            self.hand_over,
            self.start_child,
            self.child_ended,
            self.inbox,
            self.send,
            self.verify,
        ]

    @activity.defn(name="harness.load_run")
    async def load_run(self, run_id: str) -> dict[str, Any]:
        """Where the run left off."""
        try:
            return (await self._host.load(run_id)).to_dict()
        except StoreError as exc:
            raise ApplicationError(str(exc), type="StoreError", non_retryable=False) from exc
        except HarnessError as exc:
            raise ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True) from exc

    @activity.defn(name="harness.record")
    async def record(self, data: dict[str, Any]) -> None:
        """Write the batches."""
        await self._write(str(data["run_id"]), data.get("writes") or ())

    @activity.defn(name="harness.hand_over")
    async def hand_over(self, data: dict[str, Any]) -> dict[str, Any]:
        """The target of a handoff, or why it is refused."""
        try:
            target = await self._host.hand_over(AgentKey.from_dict(data["key"]), data["target"])
        except HandoffRefused as refused:
            return {"refused": str(refused)}
        except StoreError as exc:
            raise ApplicationError(str(exc), type="StoreError", non_retryable=False) from exc
        return {
            "key": target.key.to_dict(),
            "model": target.model,
            "count": target.count,
            "tools": [tool_to_dict(spec) for spec in target.toolset],
        }

    @activity.defn(name="harness.start_child")
    async def start_child(self, data: dict[str, Any]) -> dict[str, Any]:
        """The row of a child run, made unless it exists."""
        key = AgentKey.from_dict(data["key"])
        return await _store_errors(
            self._host.start_child(
                str(data["run_id"]), key, str(data["agent"]), str(data["task"]), data["call_id"]
            )
        )

    @activity.defn(name="harness.child_ended")
    async def child_ended(self, data: dict[str, Any]) -> dict[str, Any]:
        """An ended child's answer and usage."""
        return await _store_errors(
            self._host.child_ended(str(data["run_id"]), str(data["child_run_id"]))
        )

    @activity.defn(name="harness.inbox")
    async def inbox(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The run's messages not delivered yet."""
        return await _store_errors(self._host.inbox(str(data["run_id"])))

    @activity.defn(name="harness.send")
    async def send(self, data: dict[str, Any]) -> dict[str, Any]:
        """A message kept in another run's inbox, once per call."""
        return await _store_errors(
            self._host.send(
                str(data["run_id"]),
                str(data["agent"]),
                str(data["to"]),
                str(data["content"]),
                str(data["call_id"]),
            )
        )

    @activity.defn(name="harness.model_call")
    async def model_call(self, data: dict[str, Any]) -> dict[str, Any]:
        """Write the batches, then call the model."""
        run_id = str(data["run_id"])
        await self._write(run_id, data.get("writes") or ())
        agent = self._host.agent(AgentKey.from_dict(data["key"]))
        model = self._host.model(agent)
        notices: list[ModelRetry | ModelFallback] = []
        request = request_from_dict(data["request"])
        request = ModelRequest(
            messages=request.messages,
            tools=request.tools,
            settings=request.settings,
            request_id=request.request_id,
            observer=notices.append,
        )
        try:
            response = await _beating(model.request(request), float(data["heartbeat_s"]))
        except HarnessError as exc:
            raise ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True) from exc
        answer = response_to_dict(response, notices)
        attempt = activity.info().attempt
        if attempt > 1:  # an earlier attempt's worker stopped: the run says it recovered
            answer["attempt"] = attempt
        return answer

    @activity.defn(name="harness.tool_call")
    async def tool_call(self, data: dict[str, Any]) -> dict[str, Any]:
        """Write the batches, then run the tool call."""
        run_id = str(data["run_id"])
        await self._write(run_id, data.get("writes") or ())
        agent = self._host.agent(AgentKey.from_dict(data["key"]))
        toolset = await self._host.toolset(agent)
        raw = data["call"]
        call = ToolCall(id=raw["id"], name=raw["name"], arguments=raw["arguments"])
        results = _KeptResults(self._host)
        context = ToolContext(run_id=run_id, workspace=agent.workspace, results=results)
        outcome = await _beating(
            toolset.execute(call, limits=agent.limits, context=context),
            float(data["heartbeat_s"]),
        )
        return {
            "status": outcome.status,
            "output": outcome.output,
            "shown": outcome.message.content or "",
            "truncated": outcome.truncated,
            "duration_s": outcome.duration_s,
            "metadata": dict(outcome.metadata),
            "blobs": results.kept,
        }

    @activity.defn(name="harness.verify")
    async def verify(self, data: dict[str, Any]) -> dict[str, Any]:
        """Write the batches (the answer is durable first), then run the agent's check."""
        run_id = str(data["run_id"])
        await self._write(run_id, data.get("writes") or ())
        agent = self._host.agent(AgentKey.from_dict(data["key"]))
        verifier = agent.verifier
        if verifier is None:  # the agent changed under the run: nothing to check any more
            return {"passed": True, "feedback": "", "error": None}
        checker = ShellVerifier(verifier) if isinstance(verifier, str) else verifier
        context = VerifyContext(
            run_id=run_id,
            step=int(data["step"]),
            workspace=agent.workspace,
            messages=tuple(message_from_dict(m) for m in data["messages"]),
            allow_unsandboxed=agent.allow_unsandboxed,
        )
        result = await _beating(
            run_verifier(checker, str(data["answer"]), context, timeout_s=float(data["timeout_s"])),
            float(data["heartbeat_s"]),
        )
        return {"passed": result.passed, "feedback": result.feedback, "error": result.error}

    async def _write(self, run_id: str, batches: Any) -> None:
        for batch in batches:
            try:
                written = await self._host.store.append(batch_step(run_id, batch))
            except StoreConflict:
                if batch.get("expect") is None:
                    raise
                continue  # the run ended meanwhile: nothing more to say
            expected = batch.get("first_seq")
            if written and expected is not None and written[0].seq != expected:
                raise ApplicationError(
                    f"run {run_id}: the store numbered batch {batch['key']} from seq "
                    f"{written[0].seq}, the workflow from {expected}: another process wrote "
                    "to this Temporal run",
                    type="SeqMismatch",
                    non_retryable=True,
                )
            self._host.publish(written)


async def _store_errors(work: Awaitable[T]) -> T:
    """`work`; a store error is retried, any other harness error is not."""
    try:
        return await work
    except StoreError as exc:
        raise ApplicationError(str(exc), type="StoreError", non_retryable=False) from exc
    except HarnessError as exc:
        raise ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True) from exc


class _KeptResults:
    """The `ResultStore` of one tool call: full texts go back to the workflow's next write."""

    def __init__(self, host: WorkerHost) -> None:
        self._host = host
        self.kept: dict[str, str] = {}

    def save(self, run_id: str, call_id: str, text: str) -> None:
        """Keep a full result; the workflow writes it with the call's step."""
        self.kept[_result_key(call_id)] = text

    async def load(self, run_id: str, call_id: str) -> str | None:
        """A full result written before (`read_result`)."""
        key = _result_key(call_id)
        return self.kept.get(key) or await self._host.store.get_blob(run_id, key)


def _result_key(call_id: str) -> str:
    """The blob key of a full result: the same as the embedded runtime's (`StoredResults`)."""
    return f"result:{call_id}"


async def _beating(work: Awaitable[T], every_s: float) -> T:
    """Await `work`, heartbeating meanwhile (a cancel reaches the activity through them)."""

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(max(0.05, every_s / 3))

    beater = asyncio.create_task(beat())
    try:
        return await work
    finally:
        beater.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beater
