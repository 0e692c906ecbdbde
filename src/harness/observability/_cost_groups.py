"""Sums of folded runs by the values of some dimensions: the lines of a cost report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from harness.observability._cost_fold import Request, RunFold

__all__ = ["Groups", "Line", "RunInfo", "TokenCounts"]

_DECIMALS: Final = 10
"""USD in JSON is rounded to this many decimals (sums of floats leave noise below)."""
_JSON_KEYS: Final = {"task-type": "task_type"}


@dataclass(frozen=True, kw_only=True, slots=True)
class RunInfo:
    """What the run-level dimensions need of a run."""

    run_id: str
    """The run."""
    agent: str
    """Its agent."""
    task_type: str | None
    """Its task type."""
    variant: str | None = None
    """Its experiment and variant, `experiment/variant` (`None`: in no experiment)."""
    day: str
    """The UTC day it was created, `YYYY-MM-DD`."""
    completed: bool
    """Whether it ended COMPLETED."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TokenCounts:
    """Tokens by kind."""

    input: int = 0
    """Prompt tokens, cached ones included (a tool line: its results' tokens carried)."""
    output: int = 0
    """Completion tokens, reasoning included."""
    cached: int = 0
    """Prompt tokens served from the provider's cache (a tool line: pro rata)."""
    reasoning: int = 0
    """Completion tokens spent on reasoning."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Line:
    """One line of a cost report: the sums for one combination of dimension values."""

    key: Mapping[str, str | None]
    """The value of each dimension (`None`: runs without a task type)."""
    runs: int
    """Runs with something in this line."""
    completed_runs: int
    """Of them, the runs that ended COMPLETED."""
    requests: int
    """Model requests (a tool line: the requests that carried its results)."""
    tokens: TokenCounts
    """Tokens by kind."""
    usd: float | None
    """US dollars; `None` when a price in it is unknown."""
    usd_priced: float
    """US dollars of the part whose prices are known."""
    unpriced_requests: int
    """Requests whose price is unknown."""
    calls: int | None = None
    """A tool line: the calls that ran."""
    seconds: float | None = None
    """A tool line: their total time."""
    result_tokens: int | None = None
    """A tool line: the tokens of its results, each counted once."""

    @property
    def usd_per_completed_run(self) -> float | None:
        """US dollars per completed run; `None` when unknown or none completed."""
        if self.usd is None or not self.completed_runs:
            return None
        return self.usd / self.completed_runs

    @classmethod
    def empty(cls, key: Mapping[str, str | None]) -> Line:
        """A line with nothing in it."""
        return cls(
            key=key,
            runs=0,
            completed_runs=0,
            requests=0,
            tokens=TokenCounts(),
            usd=0.0,
            usd_priced=0.0,
            unpriced_requests=0,
        )

    def to_dict(self) -> dict[str, Any]:
        """The line as JSON-compatible data with stable keys."""
        per_run = self.usd_per_completed_run
        return {
            "key": {_JSON_KEYS.get(name, name): value for name, value in self.key.items()},
            "runs": self.runs,
            "completed_runs": self.completed_runs,
            "requests": self.requests,
            "tokens": {
                "input": self.tokens.input,
                "output": self.tokens.output,
                "cached": self.tokens.cached,
                "reasoning": self.tokens.reasoning,
            },
            "usd": None if self.usd is None else round(self.usd, _DECIMALS),
            "usd_priced": round(self.usd_priced, _DECIMALS),
            "unpriced_requests": self.unpriced_requests,
            "usd_per_completed_run": None if per_run is None else round(per_run, _DECIMALS),
            "calls": self.calls,
            "seconds": None if self.seconds is None else round(self.seconds, 6),
            "result_tokens": self.result_tokens,
        }


@dataclass(kw_only=True, slots=True)
class _Sum:
    runs: set[str] = field(default_factory=lambda: set[str]())
    completed: set[str] = field(default_factory=lambda: set[str]())
    requests: int = 0
    input: float = 0
    output: int = 0
    cached: float = 0
    reasoning: int = 0
    usd: float = 0.0
    unpriced: int = 0
    calls: int = 0
    seconds: float = 0.0
    result_tokens: int = 0

    def join(self, run: RunInfo) -> None:
        self.runs.add(run.run_id)
        if run.completed:
            self.completed.add(run.run_id)

    def request(self, request: Request) -> None:
        usage = request.usage
        self.requests += 1
        self.input += usage.input_tokens
        self.output += usage.output_tokens
        self.cached += usage.cached_tokens
        self.reasoning += usage.reasoning_tokens
        self.priced(request.usd)

    def priced(self, usd: float | None) -> None:
        if usd is None:
            self.unpriced += 1
        else:
            self.usd += usd

    def line(self, key: Mapping[str, str | None], tool: bool) -> Line:
        return Line(
            key=key,
            runs=len(self.runs),
            completed_runs=len(self.completed),
            requests=self.requests,
            tokens=TokenCounts(
                input=round(self.input),
                output=self.output,
                cached=round(self.cached),
                reasoning=self.reasoning,
            ),
            usd=None if self.unpriced else self.usd,
            usd_priced=self.usd,
            unpriced_requests=self.unpriced,
            calls=self.calls if tool else None,
            seconds=self.seconds if tool else None,
            result_tokens=self.result_tokens if tool else None,
        )


Key = tuple[str | None, ...]


class Groups:
    """Sums of runs by the values of `dims`; with `tool` among them, tool attributions.

    Args:
        dims: The dimensions of each key, in order.
    """

    def __init__(self, dims: Sequence[str]) -> None:
        self._dims = tuple(dims)
        self._tool = "tool" in self._dims
        self._sums: dict[Key, _Sum] = {}

    def add(self, run: RunInfo, fold: RunFold) -> None:
        """Add one run's requests (or tool shares, calls and results)."""
        if self._tool:
            self._add_tools(run, fold)
            return
        if "model" not in self._dims:
            self._sum(run, model=None, tool=None)  # a run without requests counts too
        for request in fold.requests:
            self._sum(run, model=request.model, tool=None, agent=request.agent).request(request)

    def lines(self) -> tuple[Line, ...]:
        """Every line, the most expensive first (then by key)."""
        lines = [
            total.line(dict(zip(self._dims, key, strict=True)), self._tool)
            for key, total in self._sums.items()
        ]
        return tuple(sorted(lines, key=_order))

    def _add_tools(self, run: RunInfo, fold: RunFold) -> None:
        for request in fold.requests:
            for share in request.shares:
                total = self._sum(run, model=request.model, tool=share.tool, agent=request.agent)
                total.requests += 1
                total.input += share.tokens
                total.cached += share.cached
                total.priced(share.usd)
        for call in fold.calls:
            total = self._sum(run, model=call.model, tool=call.tool, agent=call.agent)
            total.calls += 1
            total.seconds += call.seconds
        for (tool, model, agent), tokens in fold.result_tokens.items():
            self._sum(run, model=model, tool=tool, agent=agent).result_tokens += tokens

    def _sum(
        self, run: RunInfo, *, model: str | None, tool: str | None, agent: str | None = None
    ) -> _Sum:
        """The sums of one key; `agent` is that of a request or call of a run handed over."""
        values = {
            "model": model,
            "tool": tool,
            "agent": agent or run.agent,
            "task-type": run.task_type,
            "variant": run.variant,
            "day": run.day,
        }
        key = tuple(values[dim] for dim in self._dims)
        total = self._sums.get(key)
        if total is None:
            total = self._sums[key] = _Sum()
        total.join(run)
        return total


def _order(line: Line) -> tuple[float, int, tuple[str, ...]]:
    return (-line.usd_priced, -line.tokens.input, tuple(str(v) for v in line.key.values()))
