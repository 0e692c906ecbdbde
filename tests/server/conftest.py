"""Fixtures of the API tests: a Harness with scripted agents, its app, clients per role."""

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness import Agent, Harness, Limits, tool
from harness.runtime import Settings
from harness.runtime.server_config import ServerConfig, ServerToken
from harness.server.app import ServerApp, create_app
from harness.server.auth import hash_token
from harness.testing import FunctionModel, ScriptedModel, call, reply
from harness.tools.approvals import ApprovalPolicy

TOKENS = {"read": "tok-reader-0001", "operate": "tok-operator-0002", "admin": "tok-admin-0003"}
NAMES = {"read": "rita", "operate": "otto", "admin": "ada"}


def server_config(**changes: Any) -> ServerConfig:
    tokens = tuple(
        ServerToken(name=NAMES[role], sha256=hash_token(token), role=role)  # type: ignore[arg-type]
        for role, token in TOKENS.items()
    )
    return dataclasses.replace(ServerConfig(tokens=tokens, keepalive_s=0.2), **changes)


def bearer(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[role]}"}


class Gate:
    """A model that waits for the test between steps: `go()` lets one reply out."""

    def __init__(self) -> None:
        self.calls = asyncio.Semaphore(0)
        self.asked = asyncio.Event()

    def go(self, n: int = 1) -> None:
        for _ in range(n):
            self.calls.release()


@tool(side_effects="mutating")
def deploy(target: str) -> str:
    """Deploy to a target."""
    return f"deployed to {target} " + "x" * 5000  # a long result: never in a log line


@tool(side_effects="none")
def count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def agents(gate: Gate) -> tuple[Agent, ...]:
    async def slow(request: Any) -> Any:
        gate.asked.set()
        await gate.calls.acquire()
        if request.messages[-1].role == "tool":
            return (
                reply(None, call("count", {"text": "one two"}))
                if len(request.messages) < 8
                else "done"
            )
        return reply(None, call("count", {"text": "one two three"}))

    return (
        Agent(
            name="quick",
            model=ScriptedModel(
                [reply(None, call("count", {"text": "a b c"})), reply("3 words")] * 50
            ),
            tools=[count],
        ),
        Agent(
            name="deployer",
            model=ScriptedModel(
                [reply(None, call("deploy", {"target": "prod"})), reply("shipped")] * 10
            ),
            tools=[deploy],
            approvals=ApprovalPolicy(tools={"deploy": "ask"}),
        ),
        Agent(name="gated", model=FunctionModel(slow), tools=[count], limits=Limits(max_steps=50)),
    )


@dataclasses.dataclass
class Api:
    harness: Harness
    app: ServerApp
    client: httpx.AsyncClient
    gate: Gate

    async def submit(
        self, agent: str, task: str = "go", role: str = "operate", **extra: Any
    ) -> str:
        done = await self.client.post(
            "/api/runs", json={"task": task, "agent": agent, **extra}, headers=bearer(role)
        )
        assert done.status_code == 201, done.text
        return done.json()["run_id"]

    async def get(self, path: str, role: str = "read", **params: Any) -> httpx.Response:
        return await self.client.get(path, headers=bearer(role), params=params)

    async def post(self, path: str, role: str = "operate", **body: Any) -> httpx.Response:
        return await self.client.post(path, headers=bearer(role), json=body or None)

    async def state(self, run_id: str, *states: str, timeout: float = 30) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                run = (await self.get(f"/api/runs/{run_id}")).json()
                if run["state"] in states:
                    return run
                await asyncio.sleep(0.02)


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    gate = Gate()
    settings = Settings(home=tmp_path, server=server_config())
    async with Harness(
        settings, store=str(tmp_path / "h.db"), agents=agents(gate), metrics=True
    ) as h:
        app = create_app(h, env={})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield Api(h, app, client, gate)
        await app.close()
        gate.go(1000)
