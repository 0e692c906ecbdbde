"""Handoffs: an agent hands the conversation over to another agent, in the same run.

An agent lists the agents it may hand over to (`AgentSpec.handoffs`); each one is offered
to the model as a tool, `transfer_to_NAME`, with an optional `reason`, described by the
target's `description`. A step whose reply calls one is a handoff step:

- Only its first handoff call counts; no other call of the step runs (each gets a tool
  message that says why), so that a step either hands over or does its own work.
- The handoff is refused, with a tool error the model can act on, when the target is not
  an agent the runtime knows, cannot be built, or the run already handed over
  `Limits.max_handoffs` times. The step is then an ordinary step of the same agent.
- Accepted, the step commits in one transaction: the reply, the call's `tool` message,
  a `handoff` event, the target's system message, and the run's row naming the target
  (agent, model, metadata). The run then goes on under the target: its model, tools,
  strategy, limits and output type, from the conversation so far with the target's
  system message in place of the first one. Steps, usage, budgets and time carry on:
  they are the run's, whichever agent spends them.

The stored history keeps every message where it was written: a `system` message after
the first marks a handoff, and `carried` turns a stored history into the conversation the
model is sent (the latest system message first, in place of the first one). A run taken
over after a crash, or resumed, is rebuilt from the store the same way.

The runtime does the part that needs it (finding and building the target, the run's row)
through an `AgentSwitch`; this module never imports the store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, cast

from harness.core.events import Handoff, ToolStarted, summarize
from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.errors import ConfigError
from harness.tools import Toolset, ToolSpec

if TYPE_CHECKING:
    from harness.agent._turns import ActiveRun
    from harness.agent.spec import AgentSpec
    from harness.agent.strategies.base import Turn
    from harness.gateway.model import Model

__all__ = [
    "HANDOFF_PREFIX",
    "AgentSwitch",
    "HandedOff",
    "HandoffRefused",
    "HandoffStep",
    "HandoffTools",
    "Seat",
    "carried",
    "check_handoffs",
    "handoff_tool_name",
    "target_name",
]

HANDOFF_PREFIX: Final = "transfer_to_"
"""The name of the tool that hands over to agent `billing` is `transfer_to_billing`."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "reason": {
            "type": "string",
            "description": "Why you hand over, and what the next agent should know.",
        }
    },
    "additionalProperties": False,
}


def target_name(target: str | AgentSpec) -> str:
    """The name of a handoff target."""
    return target if isinstance(target, str) else target.name


def handoff_tool_name(agent: str) -> str:
    """The tool that hands over to `agent` (characters a tool name cannot hold become `_`)."""
    return HANDOFF_PREFIX + _UNSAFE.sub("_", agent)


def check_handoffs(name: str, handoffs: Sequence[str | AgentSpec]) -> None:
    """Check an agent's `handoffs` when it is defined.

    Raises:
        ConfigError: A target is named twice, is the agent itself, or its tool name is
            not a valid one (or two targets share one).
    """
    tools: dict[str, str] = {}
    for target in handoffs:
        agent = target_name(target)
        if not agent:
            raise ConfigError(f"agent {name!r}: a handoff target has an empty name")
        if agent == name:
            raise ConfigError(f"agent {name!r} lists itself in handoffs: it already runs")
        tool = handoff_tool_name(agent)
        if len(tool) > 64:
            raise ConfigError(
                f"agent {name!r}: handoff target {agent!r} makes the tool name {tool!r}, "
                "over 64 characters; give the target a shorter name"
            )
        if tool in tools:
            raise ConfigError(
                f"agent {name!r}: handoff targets {tools[tool]!r} and {agent!r} both make "
                f"the tool {tool!r}; list each agent once, under distinct names"
            )
        tools[tool] = agent


@dataclass(frozen=True, kw_only=True, slots=True)
class Seat:
    """An agent ready to take a run over: its definition, its model and its tools."""

    spec: AgentSpec
    """The agent, as the runtime resolved it."""
    model: Model
    """Its model."""
    toolset: Toolset
    """Its tools (without its handoff tools, which `HandoffTools` adds)."""


class HandoffRefused(Exception):
    """The runtime refuses a handoff; the text is the tool message the model reads."""


class HandedOff(Exception):
    """Raised once a handoff committed: the loop goes on under `seat`.

    It passes through the strategy (as a pause does) to `AgentLoop`, which continues the
    run under the target with `system` in place of the conversation's first message.
    """

    def __init__(self, seat: Seat, system: Message) -> None:
        super().__init__(f"handed over to {seat.spec.name}")
        self.seat, self.system = seat, system


class AgentSwitch(Protocol):
    """What the runtime lends the loop for handoffs (`harness.runtime._handoffs`)."""

    def tools(self, spec: AgentSpec) -> HandoffTools | None:
        """The handoff tools of `spec`, `None` when it has none (built once per agent)."""
        ...

    async def prepare(self, source: AgentSpec, target: str) -> Seat:
        """The target, ready to run; nothing is written yet.

        Raises:
            HandoffRefused: The target is unknown or cannot be built, or the run is at
                `source.limits.max_handoffs`.
        """
        ...

    @property
    def count(self) -> int:
        """Handoffs the run made so far (before a takeover too)."""
        ...

    async def commit(self, seat: Seat) -> None:
        """Commit the step so far, with the run's row naming `seat`'s agent from now on."""
        ...


def _never(reason: str | None = None) -> str:  # pragma: no cover - the loop answers these calls
    return "handoffs are carried out by the agent loop"


class HandoffTools:
    """The handoff tools of one agent: what the model is offered, and their calls.

    Args:
        spec: The agent whose `handoffs` these are.
        describe: The description of a target named by a string (the runtime looks it
            up); an `AgentSpec` target brings its own.
    """

    def __init__(self, spec: AgentSpec, describe: Callable[[str], str]) -> None:
        self._targets: dict[str, str] = {}
        specs: list[ToolSpec] = []
        for target in spec.handoffs:
            agent = target_name(target)
            tool = handoff_tool_name(agent)
            self._targets[tool] = agent
            about = target.description if not isinstance(target, str) else describe(target)
            specs.append(
                ToolSpec(
                    name=tool,
                    description=_description(agent, about),
                    parameters=_PARAMETERS,
                    function=_never,
                    side_effects="none",
                )
            )
        self.toolset = Toolset(specs)
        """The tools as a toolset: their definitions, argument checks and outcomes."""
        self._offered: tuple[tuple[ToolDefinition, ...], tuple[ToolDefinition, ...]] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The handoff tools' names."""
        return self.toolset.names

    def target(self, tool: str) -> str | None:
        """The agent a tool hands over to; `None` for any other tool."""
        return self._targets.get(tool)

    def first_call(self, calls: Sequence[ToolCall]) -> ToolCall | None:
        """The first handoff call among `calls`, if any."""
        return next((call for call in calls if call.name in self._targets), None)

    def offered(self, tools: tuple[ToolDefinition, ...]) -> tuple[ToolDefinition, ...]:
        """`tools` and the handoff tools: the same tuple for the same `tools`.

        The token estimate of a request's tools is kept by the identity of their tuple.
        """
        kept = self._offered
        if kept is None or kept[0] is not tools:
            kept = self._offered = (tools, tools + self.toolset.definitions())
        return kept[1]


def _description(agent: str, about: str) -> str:
    what = f": {about.strip()}" if about.strip() else "."
    return (
        f"Hand the conversation over to the {agent} agent{what} It sees the whole "
        "conversation and continues the task from here; you stop. Use it when that agent "
        "is better placed to go on."
    )


def carried(messages: list[Message]) -> list[Message]:
    """The conversation a stored history stands for.

    Each system message after the first (a handoff's) replaces the first one, and is sent
    nowhere else. Returns `messages` itself when it holds one system message at most.
    """
    if not any(m.role == "system" for m in messages[1:]):
        return messages
    system = next(m for m in reversed(messages) if m.role == "system")
    return [system, *(m for m in messages[1:] if m.role != "system")]


def accepted_text(agent: str) -> str:
    """The tool message of a handoff call that took effect."""
    return f"Handed the conversation over to the {agent} agent, which continues from here."


def not_run_after(agent: str) -> str:
    """The tool message of another call of a step that handed over."""
    return (
        f"This call was not run: in the same step the conversation was handed over to the "
        f"{agent} agent, which continues from here (one handoff per step, and nothing "
        "else runs in it)."
    )


def not_run_beside(tool: str) -> str:
    """The tool message of another call of a step whose handoff was refused."""
    return (
        f"This call was not run: a step that calls {tool} runs nothing else. "
        "Call it again in a step of its own if it is still needed."
    )


def unfinished_text(tool: str) -> str:
    """The answer, on resume, to a handoff call whose step never committed."""
    return (
        "This handoff did not take effect: the process running the run stopped before it "
        f"was recorded. Call {tool} again if you still want to hand over."
    )


class HandoffStep:
    """Takes the handoff steps of one agent in one run (see the module docstring).

    Args:
        switch: The runtime's side of handoffs.
        tools: The agent's handoff tools.
    """

    def __init__(self, switch: AgentSwitch, tools: HandoffTools) -> None:
        self.switch, self.tools = switch, tools

    async def take(self, run: ActiveRun, message: Message, call: ToolCall) -> Turn:
        """Hand over on `call`, the step's first handoff call; return only when refused.

        Raises:
            HandedOff: The handoff committed; the loop goes on under its target.
        """
        step, spec, toolset = run.steps, run.spec, self.tools.toolset
        others = tuple(c for c in message.tool_calls if c is not call)
        run.emit(
            ToolStarted(
                step=step, call_id=call.id, tool=call.name, arguments=summarize(call.arguments)
            )
        )
        await run.commit()  # the reply is durable before the target is looked for
        agent = self.tools.target(call.name) or ""
        invalid = toolset.check(call, limits=spec.limits)
        if invalid is not None:
            return await run.refused_handoff(message, invalid, others, not_run_beside(call.name))
        try:
            seat = await self.switch.prepare(spec, agent)
        except HandoffRefused as refused:
            outcome = toolset.outcome(call, "tool_error", str(refused), limits=spec.limits)
            return await run.refused_handoff(message, outcome, others, not_run_beside(call.name))
        run.answer(toolset.outcome(call, "ok", accepted_text(agent), limits=spec.limits))
        run.not_run(others, not_run_after(agent))
        run.emit(
            Handoff(
                step=step,
                call_id=call.id,
                from_agent=spec.name,
                to_agent=seat.spec.name,
                reason=_reason(call),
                count=self.switch.count + 1,
            )
        )
        system = run.keep(Message.system(seat.spec.system_prompt))
        await self.switch.commit(seat)
        raise HandedOff(seat, system)


def _reason(call: ToolCall) -> str | None:
    """The `reason` of a call whose arguments passed the check (an object, or nothing)."""
    if not call.arguments.strip():
        return None
    value: object = json.loads(call.arguments)
    reason = cast(dict[str, object], value).get("reason") if isinstance(value, dict) else None
    return reason if isinstance(reason, str) and reason.strip() else None
