"""A durable run stores each tool call's audit record exactly as `AuditRecord.to_json` has it."""

from __future__ import annotations

import json
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings
from harness.tools.audit import AuditRecord


@tool(side_effects="none")
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper() + " \u00e9\u2028!"


async def test_stored_audit_record_is_its_json(tmp_path: Path) -> None:
    async def model(request: ModelRequest) -> Message:
        last = request.messages[-1]
        if last.role == "tool":
            return reply(last.content)
        return reply(None, call("shout", json.dumps({"text": "h\u00e9 \u2028"})))

    agent = Agent(name="audited", model=FunctionModel(model), tools=[shout])
    async with Harness(Settings(home=tmp_path), adopt=False) as h:
        result = await h.run(agent, "shout")
        stored = await h.store.audit(result.run_id)

    assert len(stored) == 1
    record = AuditRecord.from_json(json.dumps(stored[0]))
    assert record.tool == "shout"
    assert record.approved
    assert record.status == "ok"
    assert json.loads(record.to_json()) == stored[0]
    assert list(stored[0]) == list(json.loads(record.to_json()))  # the same keys, in order
