"""The strategy interface: what a strategy may ask of a run, what it returns, and the registry.

A strategy decides what the model is asked next; the loop does everything else (events,
stop conditions, the wrap-up of a stopped run, settling a resumed run's calls). A new
strategy is one class with an async `run(run)` method and one `register_strategy` call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from harness.agent.stops import Stop
from harness.core._frozen import fast_init
from harness.core.events import EventPayload
from harness.core.messages import Message, ToolDefinition
from harness.errors import ConfigError
from harness.tools.toolset import ToolOutcome

if TYPE_CHECKING:
    from harness.agent.spec import AgentSpec

__all__ = [
    "Answer",
    "Outcome",
    "RunControl",
    "Strategy",
    "StrategyFactory",
    "Turn",
    "make_strategy",
    "register_strategy",
    "strategy_names",
]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    """A final answer, accepted by the loop (`RunControl.finish`)."""

    text: str
    """The answer as the model wrote it."""
    data: Any = None
    """Structured output: the validated value, or the JSON found when it never became
    valid; `None` when the agent declares no output type."""
    output_valid: bool | None = None
    """Whether `data` matches the agent's output type; `None` when it declares none."""
    output_errors: tuple[str, ...] = ()
    """Why the answer does not match the output type."""


Outcome = Answer | Stop
"""How a strategy ends: an accepted answer, or a stop (the loop then asks for a report)."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Turn:
    """What one model turn (and its tool round, if any) came to."""

    kind: Literal["answer", "tools", "empty", "stopped"]
    """`answer`: text and no tool call; `tools`: the calls ran; `empty`: nothing usable (the
    model was asked again); `stopped`: the run must stop."""
    text: str | None = None
    """The reply's text: the candidate answer, or what the model said beside its calls."""
    outcomes: tuple[ToolOutcome, ...] = ()
    """The calls that ran, in order."""
    hint: str | None = None
    """The hint injected after this turn's failures, if any."""
    stop: Stop | None = None
    """Why the run must stop, for `stopped`."""


class RunControl(Protocol):
    """What the loop offers a strategy for one run."""

    @property
    def spec(self) -> AgentSpec:
        """The agent."""
        ...

    @property
    def messages(self) -> Sequence[Message]:
        """The conversation so far (a resumed run's history included)."""
        ...

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        """The tools the model may call."""
        ...

    @property
    def steps(self) -> int:
        """Model turns taken so far."""
        ...

    async def turn(self, *, tools: bool = True, answer: bool = True) -> Turn:
        """Take one step: check the limits, ask the model, run its tool calls.

        Args:
            tools: Offer the tools. Without them, any call the model makes anyway is dropped.
            answer: The reply may be the final answer. A turn without tools that may be
                asks for the agent's output type natively (`response_format`); pass
                `False` for turns that ask for something else, such as a plan.
        """
        ...

    def say(self, text: str) -> None:
        """Add a `user` message from the harness to the conversation."""
        ...

    async def finish(self, text: str) -> Answer | None:
        """Offer `text` as the final answer.

        Returns:
            The accepted answer, or `None` when it was refused: the reason is then in the
            conversation, and the strategy goes on.
        """
        ...

    def emit(self, payload: EventPayload) -> None:
        """Report one event of the run, e.g. `run.emit(PlanCreated(step=run.steps, ...))`."""
        ...


class Strategy(Protocol):
    """How a run proceeds from its conversation to an outcome."""

    async def run(self, run: RunControl) -> Outcome:
        """Drive the run until an accepted answer or a stop.

        It must keep the conversation valid (every `tool` message follows the assistant
        message that called it; `RunControl.turn` does that) and must be able to continue
        from any history it produced, since a resumed run starts again from its messages.
        """
        ...


StrategyFactory = Callable[..., Strategy]
"""Builds a strategy from the agent's `strategy_options` (keyword arguments)."""

_factories: dict[str, StrategyFactory] = {}


def register_strategy(name: str, factory: StrategyFactory, *, replace: bool = False) -> None:
    """Make a strategy available by name to `AgentSpec.strategy` and `harness.toml`.

    Raises:
        ConfigError: The name is taken and `replace` is false.
    """
    if name in _factories and not replace:
        raise ConfigError(
            f"a strategy named {name!r} is already registered; pick another name, "
            "or pass replace=True to replace it"
        )
    _factories[name] = factory


def strategy_names() -> tuple[str, ...]:
    """The registered strategy names, sorted."""
    return tuple(sorted(_factories))


def make_strategy(name: str, options: Mapping[str, Any] | None = None) -> Strategy:
    """Build the strategy registered as `name` with `options`.

    Raises:
        ConfigError: No strategy has that name, or it does not accept the options.
    """
    factory = _factories.get(name)
    if factory is None:
        known = ", ".join(strategy_names())
        raise ConfigError(
            f"unknown strategy {name!r}: use one of {known}, or register a new one with "
            "harness.agent.strategies.register_strategy"
        )
    try:
        return factory(**dict(options or {}))
    except TypeError as exc:
        raise ConfigError(f"strategy {name!r} does not accept these options: {exc}") from exc
