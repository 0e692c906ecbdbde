"""Messages: the one format every provider is translated to and from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from harness.core._frozen import fast_init

__all__ = [
    "MALFORMED_TOOL_CALL",
    "Message",
    "Role",
    "TokensSource",
    "ToolCall",
    "ToolDefinition",
]

Role = Literal["system", "user", "assistant", "tool"]

TokensSource = Literal["reported", "estimated"]
"""Where a message's token count came from: the provider's usage, or the calibrated estimate."""

MALFORMED_TOOL_CALL: Final = "malformed_tool_call"
"""The reserved tool name of a call the gateway could not read from a model's text; its
arguments say what was wrong, and the toolset answers it with that instead of running it."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """A request by the model to run one tool."""

    id: str
    """The id the model gave the call; its `tool` message answers with the same id."""
    name: str
    """The tool's name as the model wrote it (it may not exist)."""
    arguments: str
    """The arguments exactly as the model sent them: a JSON string, possibly invalid."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolDefinition:
    """What a model is told about one tool: the same schema validates the arguments."""

    name: str
    """Unique name of the tool."""
    description: str
    """What the tool does and when to use it."""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    """JSON Schema (draft 2020-12) of the arguments object."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Message:
    """One entry of a conversation.

    Build messages with the constructors `system`, `user`, `assistant` and `tool`.
    """

    role: Role
    """Who speaks: `system`, `user`, `assistant` or `tool`."""
    content: str | None = None
    """The text; `None` for an assistant message that only calls tools."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls of an assistant message, in the order the model sent them."""
    tool_call_id: str | None = None
    """For a `tool` message: the id of the call it answers."""
    name: str | None = None
    """For a `tool` message: the name of the tool that answered."""
    reasoning: str | None = None
    """Reasoning or thinking text the model produced beside its answer."""
    tokens: int | None = None
    """Tokens this message takes in the context, when known."""
    tokens_source: TokensSource | None = None
    """Where `tokens` came from: `reported` by the provider, or `estimated`."""
    provider_data: dict[str, Any] | None = None
    """Provider-specific data that must be sent back unchanged (e.g. thinking signatures)."""

    def with_tokens(self, tokens: int, source: TokensSource) -> Message:
        """This message with its token count and where it came from set.

        The same as `dataclasses.replace(message, tokens=..., tokens_source=...)`, which
        costs twice as much; every message added to a run goes through here.
        """
        return Message(
            role=self.role,
            content=self.content,
            tool_calls=self.tool_calls,
            tool_call_id=self.tool_call_id,
            name=self.name,
            reasoning=self.reasoning,
            tokens=tokens,
            tokens_source=source,
            provider_data=self.provider_data,
        )

    @classmethod
    def system(cls, content: str) -> Message:
        """A system prompt."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user turn."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls,
        content: str | None = None,
        tool_calls: tuple[ToolCall, ...] | list[ToolCall] = (),
        *,
        reasoning: str | None = None,
    ) -> Message:
        """An assistant turn: text, tool calls, or both."""
        return cls(
            role="assistant", content=content, tool_calls=tuple(tool_calls), reasoning=reasoning
        )

    @classmethod
    def tool(cls, tool_call_id: str, content: str, *, name: str | None = None) -> Message:
        """The result of one tool call, answering `tool_call_id`."""
        return cls(role="tool", content=content, tool_call_id=tool_call_id, name=name)
