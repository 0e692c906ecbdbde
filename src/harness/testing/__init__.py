"""Fakes for tests, shipped with harness: use them instead of patching.

- `ScriptedModel` answers from a list of replies; `FunctionModel` from a function of the
  request. Both record every request they receive.
- `call` and `reply` build tool calls and assistant messages for scripts.
- `FakeOpenAIServer` is a real HTTP server on 127.0.0.1 that speaks the OpenAI chat
  completions API, for testing code that talks to a model over the network.
"""

from harness.gateway.scripted import FunctionModel, ScriptedModel, call, reply
from harness.testing.fake_openai import FakeOpenAIServer, FakeReply

__all__ = ["FakeOpenAIServer", "FakeReply", "FunctionModel", "ScriptedModel", "call", "reply"]
