"""Messages: the one format every provider is translated to and from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from harness.core._frozen import fast_init, set_class, twin

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

        The same as `dataclasses.replace(message, tokens=..., tokens_source=...)`, at a
        fifth of its cost; every message added to a run goes through here.
        """
        return _message(
            self.role,
            self.content,
            self.tool_calls,
            self.tool_call_id,
            self.name,
            self.reasoning,
            tokens,
            source,
            self.provider_data,
        )

    @classmethod
    def system(cls, content: str) -> Message:
        """A system prompt."""
        if cls is not Message:
            return cls(role="system", content=content)
        return _message("system", content, (), None, None, None, None, None, None)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user turn."""
        if cls is not Message:
            return cls(role="user", content=content)
        return _message("user", content, (), None, None, None, None, None, None)

    @classmethod
    def assistant(
        cls,
        content: str | None = None,
        tool_calls: tuple[ToolCall, ...] | list[ToolCall] = (),
        *,
        reasoning: str | None = None,
    ) -> Message:
        """An assistant turn: text, tool calls, or both."""
        calls = tool_calls if type(tool_calls) is tuple else tuple(tool_calls)
        if cls is not Message:
            return cls(role="assistant", content=content, tool_calls=calls, reasoning=reasoning)
        return _message("assistant", content, calls, None, None, reasoning, None, None, None)

    @classmethod
    def tool(cls, tool_call_id: str, content: str, *, name: str | None = None) -> Message:
        """The result of one tool call, answering `tool_call_id`."""
        if cls is not Message:
            return cls(role="tool", content=content, tool_call_id=tool_call_id, name=name)
        return _message("tool", content, (), tool_call_id, name, None, None, None, None)


_MESSAGE_SLOTS: Final = twin(Message)


def _message(
    role: Role,
    content: str | None,
    tool_calls: tuple[ToolCall, ...],
    tool_call_id: str | None,
    name: str | None,
    reasoning: str | None,
    tokens: int | None,
    tokens_source: TokensSource | None,
    provider_data: dict[str, Any] | None,
) -> Message:
    """A `Message` built by its slots, without `type.__call__` (see `core._frozen`).

    Every message of a run is made here: a third of the cost of `Message(...)`.
    """
    message: Any = object.__new__(_MESSAGE_SLOTS)
    message.role = role
    message.content = content
    message.tool_calls = tool_calls
    message.tool_call_id = tool_call_id
    message.name = name
    message.reasoning = reasoning
    message.tokens = tokens
    message.tokens_source = tokens_source
    message.provider_data = provider_data
    set_class(message, Message)
    return message
