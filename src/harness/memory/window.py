"""The context window manager: what to send so that a request always fits the window.

Before each model call, `WindowManager.prepare` measures the conversation against the
profile's context window and applies the tiers of a `ContextPolicy`: above `trim_at` it
removes the oldest turns, above `summarize_at` it has a model summarize the older history
into one message, above `stage_at` it has the model write a stage summary of everything
and continues from that. Whatever the tier, what it returns fits the budget (the window
less the room reserved for the answer), never splits an assistant message from the tool
messages that answer it, and always starts with the system prompt and the task.

The manager is stateful, one per run: a summary, and the point in the history it covers,
carry over to the next `prepare`, which starts from the summary and the newer turns. The
state is plain data (`ContextState`, also in each `Compaction`), so that a resumed run can
start from where the last compaction left off. The full history is never changed: only
what is sent is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from harness.core.messages import Message, ToolDefinition
from harness.core.usage import Prices, Usage
from harness.errors import ConfigError
from harness.gateway.model import Model, ModelResponse
from harness.memory._cut import cap_message, cut_largest, head_length, split_turns
from harness.memory._summary import request_summary, summary_message
from harness.memory.tokens import TokenCounter

if TYPE_CHECKING:
    from harness.core.events import ContextCompacted
    from harness.gateway.profiles import ModelProfile

__all__ = ["Compaction", "ContextPolicy", "ContextState", "Prepared", "Tier", "WindowManager"]

Tier = Literal["trim", "summarize", "stage_summary"]
"""How a compaction made room: removed old turns, summarized them, or summarized all."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ContextPolicy:
    """When and how to compact a conversation; fractions are of `context_window`.

    Raises:
        ConfigError: A value out of range; the message names it and what to use instead.
    """

    context_window: int
    """Tokens the model can attend to (the profile's `context_window`)."""
    trim_at: float = 0.60
    """Above this share, remove the oldest turns."""
    summarize_at: float = 0.80
    """Above this share, summarize the history older than the last turns."""
    stage_at: float = 0.95
    """Above this share, summarize everything into a stage summary and continue from it."""
    trim_to: float = 0.50
    """Removing turns goes on down to this share, so that it does not happen every step."""
    keep_last_turns: int = 4
    """Turns (an assistant message with its tool results, or a lone message) always kept,
    unless the window cannot hold them, in which case the oldest of them go first."""
    reserve_output_tokens: int | None = None
    """Room left for the answer; `None` is an eighth of the window, at most 4096."""
    summary_max_tokens: int = 1024
    """Longest summary asked for (at most a quarter of the budget)."""
    max_message_share: float = 0.5
    """No message after the task may take more than this share of the budget: longer
    ones (a huge tool result) are cut in the middle, with a note."""

    def __post_init__(self) -> None:
        if self.context_window < 64:
            raise ConfigError(
                f"context_window must be at least 64 tokens, got {self.context_window}"
            )
        order = (self.trim_to, self.trim_at, self.summarize_at, self.stage_at)
        if not 0 < order[0] <= order[1] <= order[2] <= order[3] <= 1:
            raise ConfigError(
                "context thresholds need 0 < trim_to <= trim_at <= summarize_at <= stage_at "
                f"<= 1, got {order}; set trim_at equal to summarize_at to summarize without "
                "trimming first"
            )
        reserve = self.reserve_output_tokens
        if reserve is not None and not 0 <= reserve <= self.context_window // 2:
            raise ConfigError(
                f"reserve_output_tokens must be between 0 and half the context window "
                f"({self.context_window // 2}), got {reserve}"
            )
        if self.keep_last_turns < 1 or not 0 < self.max_message_share <= 1:
            raise ConfigError(
                "keep_last_turns must be at least 1 (the model must see the latest turn) and "
                "max_message_share in (0, 1], got "
                f"{self.keep_last_turns} and {self.max_message_share}"
            )

    @classmethod
    def for_profile(cls, profile: ModelProfile, **overrides: Any) -> ContextPolicy | None:
        """The policy for a model profile, or `None` when its context window is unknown.

        The profile's `max_output_tokens` is the reserve for the answer and its `context`
        thresholds apply; `overrides` set any field over them (`trim_at=0.7`,
        `keep_last_turns=6`, …).

        Raises:
            ConfigError: The thresholds, with the defaults of the ones left unset, are out
                of order or range; the message names the profile.
        """
        if profile.context_window is None:
            return None
        fields: dict[str, Any] = {"reserve_output_tokens": profile.max_output_tokens}
        fields.update(profile.context.overrides())
        fields.update(overrides)
        if fields["reserve_output_tokens"] is not None:
            fields["reserve_output_tokens"] = min(
                fields["reserve_output_tokens"], profile.context_window // 2
            )
        try:
            return cls(context_window=profile.context_window, **fields)
        except ConfigError as exc:
            raise ConfigError(f"model profile {profile.name!r}: {exc}") from exc

    @property
    def budget(self) -> int:
        """The most tokens a request may take: the window less the reserve for the answer."""
        reserve = self.reserve_output_tokens
        if reserve is None:
            reserve = min(self.context_window // 8, 4096)
        return self.context_window - reserve

    @property
    def summary_tokens(self) -> int:
        """The longest summary asked for."""
        return max(16, min(self.summary_max_tokens, self.budget // 4))

    def tier(self, tokens: int) -> Tier | None:
        """The tier that a request of `tokens` tokens calls for, if any."""
        share = tokens / self.context_window
        if share > self.stage_at:
            return "stage_summary"
        if share > self.summarize_at:
            return "summarize"
        if share > self.trim_at or tokens > self.budget:
            return "trim"
        return None


@dataclass(frozen=True, kw_only=True, slots=True)
class ContextState:
    """What earlier compactions left: where the verbatim history resumes, and the summary."""

    history_index: int = 0
    """Index in the full history of the first message after the task still sent as it is;
    the ones before it (after the task) are replaced by the summary message."""
    summary: str | None = None
    """The latest summary the model wrote; `None` when turns were only removed."""
    stage: bool = False
    """Whether `summary` is a stage summary."""

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON-compatible data."""
        return {"history_index": self.history_index, "summary": self.summary, "stage": self.stage}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextState:
        """The state from `to_dict` data."""
        summary = data.get("summary")
        return cls(
            history_index=int(data.get("history_index", 0)),
            summary=None if summary is None else str(summary),
            stage=bool(data.get("stage", False)),
        )

    @classmethod
    def from_event(cls, event: ContextCompacted) -> ContextState:
        """The state after a compaction, from its `context_compacted` event.

        The event's `state` leaves out a summary that the compaction itself wrote (it is
        the event's `summary`), so that the event carries it once.
        """
        state = dict(event.state or {})
        state.setdefault("summary", event.summary)
        return cls.from_dict(state)


@dataclass(frozen=True, kw_only=True, slots=True)
class Compaction:
    """One compaction of what is sent: the payload of a `context_compacted` event."""

    tier: Tier
    """What was done: `trim`, `summarize` or `stage_summary`."""
    tokens_before: int
    """Tokens of the request before compaction."""
    tokens_after: int
    """Tokens of the request sent."""
    messages_removed: int
    """History messages that this compaction stopped sending."""
    messages_cut: int = 0
    """Messages sent with part of their text cut out."""
    summary: str | None = None
    """The summary this compaction wrote, if any."""
    fallback: str | None = None
    """Why a summary tier trimmed instead (no summarizer, or the summarizer failed)."""
    usage: Usage = field(default_factory=Usage)
    """What the summary request consumed; count it in the run's usage."""
    state: ContextState = field(default_factory=ContextState)
    """The state after this compaction."""
    model: str | None = None
    """The model that wrote the summary (its profile's name), when one was asked."""
    prices: Prices | None = None
    """The prices the summary request was charged at; `None` when unknown or not asked."""

    def event(self, step: int) -> ContextCompacted:
        """The `context_compacted` event of this compaction, at `step`.

        `summary` is the summary this compaction wrote, if any; `state` is the state after
        it (`ContextState.from_event` reads it back), holding a summary only when an
        earlier compaction wrote it, so that the event carries each summary once.
        """
        from harness.core.events import ContextCompacted

        state = self.state.to_dict()
        if self.summary is not None and state["summary"] == self.summary:
            del state["summary"]
        return ContextCompacted(
            step=step,
            tier=self.tier,
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            messages_removed=self.messages_removed,
            messages_cut=self.messages_cut,
            summary=self.summary,
            fallback=self.fallback,
            usage=self.usage,
            state=state,
            model=self.model,
            prices=self.prices,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Prepared:
    """What to send to the model."""

    messages: tuple[Message, ...]
    """The messages of the request: within the budget, a valid sequence."""
    tokens: int
    """Their token count, as the manager's `TokenCounter` reckons it."""
    compaction: Compaction | None = None
    """The compaction made for this request, if any: report it as `context_compacted`."""


@dataclass(kw_only=True)
class _View:
    """A request being put together: head, the summary message, then whole turns."""

    head: list[Message]
    lead: list[Message]
    turns: list[tuple[Message, ...]]
    start: int
    """Index in the full history of the first message of `turns`."""

    def messages(self) -> list[Message]:
        return [*self.head, *self.lead, *(m for t in self.turns for m in t)]

    def drop(self, count: int) -> int:
        """Stop sending the oldest `count` turns; returns how many messages that was."""
        gone = sum(len(t) for t in self.turns[:count])
        del self.turns[:count]
        self.start += gone
        return gone


class WindowManager:
    """Keeps one run's requests within its model's context window.

    Args:
        policy: The thresholds and sizes.
        counter: Counts tokens; feed it reported usage through `observe`.
        state: Where an earlier manager of the same run left off (resumed runs).
    """

    def __init__(
        self,
        policy: ContextPolicy,
        *,
        counter: TokenCounter | None = None,
        state: ContextState | None = None,
    ) -> None:
        self.policy = policy
        self.counter = counter or TokenCounter()
        self._state = state or ContextState()
        self._boundary: Message | None = None
        self._cut_reported: set[int] = set()
        self._capped: dict[int, tuple[Message, Message]] = {}

    @property
    def state(self) -> ContextState:
        """Where the verbatim history resumes, and the summary carried forward."""
        return self._state

    def observe(
        self, sent: Sequence[Message], tools: Sequence[ToolDefinition], usage: Usage
    ) -> None:
        """Learn from the usage the provider reported for a request that was sent."""
        self.counter.observe(sent, tools, usage.input_tokens)

    async def prepare(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition] = (),
        *,
        summarizer: Model | None = None,
    ) -> Prepared:
        """The messages to send for `messages`, the run's full history so far.

        Args:
            messages: The whole conversation, system prompt and task first; it only grows
                from one call to the next.
            tools: The tools the request offers (they take room too).
            summarizer: Writes summaries; without one, the summary tiers trim instead.

        Raises:
            ConfigError: Even cut down to the system prompt, the task and the last message,
                the request does not fit (the tools alone may be too many for the window).
        """
        if self._state.history_index == 0 and self._boundary is None:
            # Nothing compacted yet: the view would be the conversation itself, and a request
            # below every threshold goes as it is (no turns to split, no lists to build).
            before = self.counter.count(messages, tools)
            if self.policy.tier(before) is None:
                return Prepared(messages=tuple(messages), tokens=before)
        view = self._view(messages)
        before = self.counter.count(view.messages(), tools)
        tier = self.policy.tier(before)
        if tier is None:
            return Prepared(messages=tuple(view.messages()), tokens=before)
        start = view.start
        cut = self._cap(view)
        if cut:
            tier = self.policy.tier(self.counter.count(view.messages(), tools))
        done: Tier = "trim"
        fallback, response, summary = None, None, None
        if tier in ("summarize", "stage_summary"):
            try:
                summary, response = await self._summarize(view, tier, summarizer)
                done = tier
            except Exception as exc:  # a summary that fails must not end the run: trim
                fallback = f"{type(exc).__name__}: {exc}"
        if tier is not None and done == "trim":
            self._trim(view, tools)
        sent, fitted = self._fit(view, tools)
        new_cuts = (cut | fitted) - self._cut_reported
        self._cut_reported |= new_cuts
        after = self.counter.count(sent, tools)
        if view.start == start and summary is None and not new_cuts:
            return Prepared(messages=tuple(sent), tokens=after)
        self._remember(messages, view)
        compaction = Compaction(
            tier=done,
            tokens_before=before,
            tokens_after=after,
            messages_removed=view.start - start,
            messages_cut=len(new_cuts),
            summary=summary,
            fallback=fallback,
            usage=Usage() if response is None else response.usage,
            state=self._state,
            model=None
            if response is None or summarizer is None
            else response.profile or summarizer.name,
            prices=None if response is None else response.prices,
        )
        return Prepared(messages=tuple(sent), tokens=after, compaction=compaction)

    def _view(self, messages: Sequence[Message]) -> _View:
        n = head_length(messages)
        state = self._state
        if state.history_index > len(messages) or (
            self._boundary is not None and messages[state.history_index - 1] != self._boundary
        ):
            state = self._state = ContextState()
            self._boundary, self._cut_reported, self._capped = None, set(), {}
        start = max(n, state.history_index)
        lead = [] if start == n else [summary_message(state.summary, start - n, stage=state.stage)]
        return _View(
            head=list(messages[:n]), lead=lead, turns=split_turns(messages[start:]), start=start
        )

    def _cap(self, view: _View) -> set[int]:
        """Cut any message after the head longer than the policy's share of the budget.

        A message is cut once, the same way for every later request (which keeps the
        provider's prompt cache warm).

        Returns:
            The history indexes of the messages cut.
        """
        limit = int(self.policy.max_message_share * self.policy.budget)
        messages = [m for t in view.turns for m in t]
        cut: set[int] = set()
        for i, message in enumerate(messages):
            if self.counter.message_tokens(message) <= limit:
                continue
            known = self._capped.get(id(message))
            if known is None or known[0] is not message:
                known = self._capped[id(message)] = (
                    message,
                    cap_message(message, limit, self.counter),
                )
            if known[1] is not message:
                messages[i] = known[1]
                cut.add(view.start + i)
        if cut:
            view.turns = split_turns(messages)
        return cut

    def _trim(self, view: _View, tools: Sequence[ToolDefinition]) -> None:
        """Remove the oldest turns down to the policy's `trim_to`, keeping the last turns."""
        target = min(self.policy.budget, int(self.policy.trim_to * self.policy.context_window))
        total = self.counter.count(view.messages(), tools)
        count = 0
        while count < len(view.turns) - self.policy.keep_last_turns and total > target:
            total -= sum(self.counter.message_tokens(m) for m in view.turns[count])
            count += 1
        if count:
            view.drop(count)
            view.lead = [self._lead(view)]

    def _lead(self, view: _View) -> Message:
        state = self._state
        removed = view.start - len(view.head)
        return summary_message(state.summary, removed, stage=state.stage)

    async def _summarize(
        self, view: _View, tier: Tier, summarizer: Model | None
    ) -> tuple[str, ModelResponse]:
        if summarizer is None:
            raise ValueError("no summarizer model was given")
        stage = tier == "stage_summary"
        keep = 0 if stage else self.policy.keep_last_turns
        older = view.turns[: max(0, len(view.turns) - keep)]
        if not older:
            raise ValueError(f"nothing older than the last {keep} turns to summarize")
        task = next((m.content or "" for m in view.head if m.role == "user"), "")
        text, response = await request_summary(
            summarizer,
            task=task,
            previous=self._state.summary,
            messages=[m for t in older for m in t],
            stage=stage,
            input_budget=self.policy.context_window - self.policy.summary_tokens,
            max_tokens=self.policy.summary_tokens,
            counter=self.counter,
        )
        view.drop(len(older))
        self._state = ContextState(history_index=view.start, summary=text, stage=stage)
        view.lead = [self._lead(view)]
        return text, response

    def _fit(self, view: _View, tools: Sequence[ToolDefinition]) -> tuple[list[Message], set[int]]:
        """Make the request fit the budget: drop kept turns down to one, then cut text."""
        budget = self.policy.budget
        while len(view.turns) > 1 and self.counter.count(view.messages(), tools) > budget:
            view.drop(1)
            view.lead = [self._lead(view)]
        sent = view.messages()
        cut = cut_largest(
            sent,
            budget,
            lambda ms: self.counter.count(ms, tools),
            self.counter,
        )
        if cut is None:
            raise self._too_small(tools)
        offset = view.start - len(view.head) - len(view.lead)
        return sent, {i if i < len(view.head) else i + offset for i in cut if not _is_lead(i, view)}

    def _too_small(self, tools: Sequence[ToolDefinition]) -> ConfigError:
        budget = self.policy.budget
        return ConfigError(
            f"the request does not fit the context window of {self.policy.context_window} "
            f"tokens (budget {budget} after the reserve for the answer), even with only the "
            "system prompt, the task and the last message, all cut short; the tool "
            f"definitions alone take about {self.counter.estimate([], tools)} tokens. Use "
            "a model profile with a larger context_window, fewer tools, or a smaller "
            "reserve_output_tokens"
        )

    def _remember(self, messages: Sequence[Message], view: _View) -> None:
        if view.start != self._state.history_index:
            self._state = dataclasses.replace(self._state, history_index=view.start)
        index = self._state.history_index
        self._boundary = messages[index - 1] if index > 0 else None


def _is_lead(index: int, view: _View) -> bool:
    return len(view.head) <= index < len(view.head) + len(view.lead)
