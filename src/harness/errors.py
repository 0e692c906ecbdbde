"""The exception tree of harness.

Every exception harness raises derives from `HarnessError`. Three kinds are kept apart:
mistakes a developer must fix, failures at run time (with retryability as data), and
signals that tools raise on purpose to steer the loop.

```text
HarnessError
├── ConfigError                      a developer mistake: bad configuration or API use
│   ├── ToolDefinitionError          a function that cannot become a tool
│   └── ProfileError                 a model profile with a value it cannot use
├── ModelError                       the model gateway failed
│   ├── ModelAPIError                the provider answered with an error (status, retryable)
│   │   ├── ModelAuthenticationError     401, 403
│   │   ├── ModelNotFoundError           404
│   │   ├── ModelBadRequestError         400, 422
│   │   │   └── ContextOverflowError     the request does not fit the context window
│   │   ├── ModelRateLimitError          429
│   │   ├── ModelOverloadedError         529
│   │   ├── ModelServerError             5xx
│   │   └── ModelStreamError             an error event inside a 200 stream
│   ├── ModelConnectionError         the server could not be reached (retryable)
│   │   └── ModelTimeoutError        no answer in time (retryable)
│   └── ModelResponseError           the answer could not be understood
├── ToolSignal                       raised by tools on purpose; never crashes a run
│   ├── ToolError                    a business rule failed: message + hint for the model
│   └── ApprovalRequired             the call must wait for a human decision
├── StoreError                       the run store failed (`retryable` as data)
│   └── StoreConflict                a write's condition did not hold; nothing was written
├── RunError                         a run could not go on
│   ├── AlreadyDecided               a tool call has its approve/deny already; this one lost
│   ├── InvalidTransition            a lifecycle move that the state table forbids
│   └── RunQueueFull                 the scheduler's queue is at its bound
└── RunInterrupted                   raised by the runtime at a step boundary to pause a run
```

Third-party errors are translated once, where they enter harness, with `raise ... from exc`.
"""

from __future__ import annotations

__all__ = [
    "AlreadyDecided",
    "ApprovalRequired",
    "ConfigError",
    "ContextOverflowError",
    "HarnessError",
    "InvalidTransition",
    "ModelAPIError",
    "ModelAuthenticationError",
    "ModelBadRequestError",
    "ModelConnectionError",
    "ModelError",
    "ModelNotFoundError",
    "ModelOverloadedError",
    "ModelRateLimitError",
    "ModelResponseError",
    "ModelServerError",
    "ModelStreamError",
    "ModelTimeoutError",
    "ProfileError",
    "RunError",
    "RunInterrupted",
    "RunQueueFull",
    "StoreConflict",
    "StoreError",
    "ToolDefinitionError",
    "ToolError",
    "ToolSignal",
]


class HarnessError(Exception):
    """Root of every exception raised by harness."""


class ConfigError(HarnessError):
    """A developer mistake: invalid configuration, arguments or API use."""


class ToolDefinitionError(ConfigError):
    """A function or schema that cannot be turned into a tool."""


class ProfileError(ConfigError):
    """A model profile has a value it cannot use.

    Attributes:
        profile: The profile's name.
        key: The key within the profile, e.g. `temperature` or `prices.input`.
        problem: What is wrong and what to do about it.
    """

    def __init__(self, profile: str, key: str, problem: str) -> None:
        super().__init__(f"model profile {profile!r}: key {key!r}: {problem}")
        self.profile = profile
        self.key = key
        self.problem = problem


class ModelError(HarnessError):
    """The model gateway could not produce a response.

    Attributes:
        retryable: Whether the same request may succeed if sent again.
        request_id: The `X-Request-ID` harness sent, or the provider's id, when known.
    """

    retryable: bool = False

    def __init__(self, message: str, *, request_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id


class ModelAPIError(ModelError):
    """The provider answered with an error status.

    Attributes:
        status: The HTTP status code (200 for an error event inside a stream).
        retryable: Whether a retry may succeed.
        retry_after: Seconds the provider asked to wait, when it said so.
        provider_type: The provider's own error type or code, when it sent one.
        body: The error body as received (truncated), for logs and debugging.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        retryable: bool,
        retry_after: float | None = None,
        provider_type: str | None = None,
        body: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, request_id=request_id)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.provider_type = provider_type
        self.body = body

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.message}"


class ModelAuthenticationError(ModelAPIError):
    """The provider refused the credentials (401) or the permission (403)."""


class ModelNotFoundError(ModelAPIError):
    """The model or endpoint does not exist on this server (404)."""


class ModelBadRequestError(ModelAPIError):
    """The provider rejected the request itself (400, 422)."""


class ContextOverflowError(ModelBadRequestError):
    """The request is longer than the model's context window."""


class ModelRateLimitError(ModelAPIError):
    """Too many requests or tokens for now (429)."""


class ModelOverloadedError(ModelAPIError):
    """The provider is overloaded (529)."""


class ModelServerError(ModelAPIError):
    """The provider failed on its side (5xx)."""


class ModelStreamError(ModelAPIError):
    """The provider sent an error event inside a stream that had started with 200."""


class ModelConnectionError(ModelError):
    """The model server could not be reached, or the connection broke."""

    retryable = True


class ModelTimeoutError(ModelConnectionError):
    """The model server did not answer within the timeout."""


class ModelResponseError(ModelError):
    """The provider's answer could not be understood (malformed JSON, missing fields)."""

    retryable = True


class ToolSignal(HarnessError):
    """Base of the signals a tool raises on purpose to steer the loop."""


class ToolError(ToolSignal):
    """A tool's business rule failed; the model is told what went wrong and what to try.

    Args:
        message: What went wrong, in words the model can act on.
        hint: What the model should try next.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ApprovalRequired(ToolSignal):
    """The tool call must wait for a human to approve or deny it.

    Args:
        reason: Why approval is needed, shown to whoever decides.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StoreError(HarnessError):
    """The run store could not read or write: locked, unreachable, or newer than this code.

    A write that fails with `StoreError` wrote nothing: a step commits whole or not at all.

    Attributes:
        retryable: Whether the same call may succeed later (a lock released, a server back).
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


class StoreConflict(StoreError):
    """A write's condition did not hold, so nothing was written.

    The run does not exist or already exists, is not in an expected state, or is leased
    to another owner.
    """


class RunError(HarnessError):
    """A run could not go on."""


class AlreadyDecided(RunError):
    """A tool call was approved or denied already; a second decision is refused.

    The message says which decision stands, who made it and when.
    """


class InvalidTransition(RunError):
    """A lifecycle move that the state table does not allow."""


class RunQueueFull(RunError):
    """The queue of pending runs is at its bound; the submission was not accepted."""


class RunInterrupted(HarnessError):
    """A control-flow signal: the runtime stops the loop at a step boundary (pause).

    The loop lets it through untouched; what was done so far is already committed.
    """
