"""Fakes for tests, shipped with harness: use them instead of patching.

- `ScriptedModel` answers from a list of replies; `FunctionModel` from a function of the
  request. Both record every request they receive.
- `call` and `reply` build tool calls and assistant messages for scripts.
- `FakeOpenAIServer` is a real HTTP server on 127.0.0.1 that speaks the OpenAI chat
  completions API, for testing code that talks to a model over the network.
- `FakeAnthropicServer` does the same for the Anthropic Messages API, from the same
  `FakeReply` scripts; `fake_anthropic` also replays recorded exchanges and builds
  Anthropic error answers.
- `faults` builds the replies of a failing server for its scripts: error statuses with or
  without `Retry-After`, a reset mid-stream, a slow first byte, malformed JSON, an error
  event inside a stream.
"""

from harness.gateway.scripted import FunctionModel, ScriptedModel, call, reply
from harness.testing import fake_anthropic, faults
from harness.testing.fake_anthropic import FakeAnthropicServer
from harness.testing.fake_openai import FakeOpenAIServer, FakeReply

__all__ = [
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "FakeReply",
    "FunctionModel",
    "ScriptedModel",
    "call",
    "fake_anthropic",
    "faults",
    "reply",
]
