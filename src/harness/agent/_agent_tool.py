"""An agent used as a tool: each call runs the agent as a child run of the caller.

The tool only asks the runtime (`ToolContext.children`) to run the child and wait for it;
the child's id, its row, the wait, the limits and the roll-up of its usage are the
runtime's (`harness.runtime.children`). The call is `idempotent`: made again after a
takeover, it finds the child it started instead of starting another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from weakref import WeakKeyDictionary

from harness.errors import ToolError
from harness.tools import ToolContext, ToolResult, ToolSpec

if TYPE_CHECKING:
    from harness.agent.spec import AgentSpec

__all__ = ["AGENT_TOOL_PREFIX", "AGENT_TOOL_TIMEOUT_S", "agent_tool", "tool_agent"]

AGENT_TOOL_PREFIX: Final = "agent:"
"""How `harness.toml` names an agent used as a tool: `tools = ["agent:researcher"]`."""

AGENT_TOOL_TIMEOUT_S: Final = 3600.0
"""How long a call waits for its child run by default (`Limits.tool_timeout` may cut it)."""

_TARGETS: WeakKeyDictionary[Callable[..., Any], AgentSpec | str] = WeakKeyDictionary()
"""The agent each agent tool's function runs (`tool_agent`)."""

_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "minLength": 1,
            "description": "The task for the agent, complete in itself: it sees nothing else "
            "of this conversation.",
        }
    },
    "required": ["task"],
    "additionalProperties": False,
}


def agent_tool(
    agent: AgentSpec | str,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> ToolSpec:
    """A tool whose calls run `agent` as a child run and answer with its result.

    Args:
        agent: The agent, or the name of one the runtime knows (`[agents.NAME]` …).
        name: The tool's name; the agent's name by default.
        description: What the model is told; by default, that it hands a task to the agent.
        timeout: Seconds a call waits for its child (`AGENT_TOOL_TIMEOUT_S` by default);
            a child still running then is cancelled.

    Returns:
        The tool, `idempotent`: a call made again finds the child it started.
    """
    agent_name = agent if isinstance(agent, str) else agent.name
    tool_name = name or agent_name

    async def run_agent(task: str, context: ToolContext) -> ToolResult:
        if context.children is None:
            raise ToolError(
                f"the agent tool {tool_name!r} runs {agent_name!r} as a child run, which "
                "needs harness's runtime (a Harness, or Agent.run_sync); it cannot run here",
                hint="Do the task yourself, without this tool.",
            )
        return await context.children.run(agent, task, context)

    _TARGETS[run_agent] = agent
    return ToolSpec(
        name=tool_name,
        description=description
        or (
            f"Hand a task to the {agent_name!r} agent. It works on it on its own, with its own "
            "tools, and returns its final answer. Give it everything it needs in `task`."
        ),
        parameters=_PARAMETERS,
        function=run_agent,
        side_effects="idempotent",
        timeout=timeout or AGENT_TOOL_TIMEOUT_S,
        context_param="context",
        coerce=_task,
    )


def _task(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"task": arguments["task"]}


def tool_agent(spec: ToolSpec) -> AgentSpec | str | None:
    """The agent `spec` runs as a child run, when it is an agent tool (else `None`)."""
    return _TARGETS.get(spec.function)
