"""What the metrics remember of each run between its events: labels and the open step."""

from __future__ import annotations

__all__ = ["RunFollow", "RunTable"]

UNKNOWN = "unknown"
_FALLBACK_PREFIX = "fallback:"


class RunFollow:
    """One run as the metrics follow it."""

    __slots__ = ("agent", "model", "step_started", "steps", "task_label", "task_type", "variant")

    def __init__(self) -> None:
        self.agent = UNKNOWN
        self.task_type = ""
        self.model = UNKNOWN
        """The model answering the current request."""
        self.step_started: float | None = None
        """When the open step started (its `step_started`), if one is open."""
        self.steps: list[float] | None = None
        """The step-duration series of the run's labels, once looked up (the metrics' cache)."""
        self.task_label: str | None = None
        """The task type's label value, once looked up (the metrics' cache)."""
        self.variant: tuple[str, str] | None = None
        """The run's experiment and variant, when it takes part in one."""

    def learn(
        self,
        agent: str | None = None,
        task_type: str | None = None,
        model: str | None = None,
        variant: tuple[str, str] | None = None,
    ) -> None:
        """Keep what is told of the run's labels; `None` leaves what was known before."""
        if agent is not None:
            self.agent = agent
            self.steps = None
        if task_type is not None:
            self.task_type = task_type
            self.steps = self.task_label = None
        if model is not None:
            self.answering(model)
        if variant is not None:
            self.variant = variant

    def answering(self, model: str) -> None:
        """A request went to `model`: a fallback chain's first member answers it first.

        `FallbackModel.name` is `fallback:` and its members' names joined by commas.
        """
        if model.startswith(_FALLBACK_PREFIX):
            model = model[len(_FALLBACK_PREFIX) :].split(",", 1)[0]
        self.model = model


class RunTable:
    """The runs being followed, at most `limit` (the oldest is forgotten first)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._runs: dict[str, RunFollow] = {}

    def get(self, run_id: str) -> RunFollow:
        """The run's state; a run never seen starts with unknown labels."""
        run = self._runs.get(run_id)
        if run is None:
            if len(self._runs) >= self._limit:
                del self._runs[next(iter(self._runs))]
            run = self._runs[run_id] = RunFollow()
        return run

    def learn(
        self,
        run_id: str,
        agent: str | None = None,
        task_type: str | None = None,
        model: str | None = None,
        variant: tuple[str, str] | None = None,
    ) -> None:
        """Keep what is told of the run's labels (`RunFollow.learn`)."""
        self.get(run_id).learn(agent, task_type, model, variant)

    def forget(self, run_id: str) -> None:
        """Stop following the run (it ended, or paused)."""
        self._runs.pop(run_id, None)

    def __len__(self) -> int:
        return len(self._runs)
