"""Every stored message carries its token count and where it came from, on both stores.

Assistant messages count what the provider reported as their output tokens; every other
message (system, user, tool, harness nudges) the calibrated estimate.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness import Agent, Harness, tool
from harness.gateway import ModelProfile
from harness.runtime import Settings
from harness.testing import FakeOpenAIServer, FakeReply

from .test_contract import raw_rows


@tool(side_effects="none")
def count_files() -> str:
    """Count the files."""
    return "there are twelve files in this directory, and three of them are Python"


async def test_after_a_run_every_message_row_has_tokens_and_their_source(
    tmp_path: Path, store_target: str
) -> None:
    replies = [
        dataclasses.replace(FakeReply.tool_call("count_files", {}), output_tokens=17),
        FakeReply.text("Twelve files.", output_tokens=4),
    ]
    with FakeOpenAIServer(replies) as server:
        profile = ModelProfile(name="fake", model="fake-model", base_url=server.base_url)
        settings = Settings(home=tmp_path, profiles={"fake": profile})
        agent = Agent(name="counter", model="fake", tools=[count_files])
        async with Harness(settings, store=store_target) as h:
            result = await h.run(agent, "how many files?", timeout=60)
            stored = await h.messages(result.run_id)
    rows = raw_rows(
        store_target, "SELECT role, tokens, tokens_source FROM messages ORDER BY run_id, seq"
    )
    assert [role for role, _, _ in rows] == ["system", "user", "assistant", "tool", "assistant"]
    assert all(isinstance(tokens, int) and tokens > 0 for _, tokens, _ in rows), rows
    assert [(tokens, source) for role, tokens, source in rows if role == "assistant"] == [
        (17, "reported"),
        (4, "reported"),
    ]
    assert {source for role, _, source in rows if role != "assistant"} == {"estimated"}
    assert [(m.tokens, m.tokens_source) for m in stored] == [(t, s) for _, t, s in rows]
    assert list(result.messages) == stored
