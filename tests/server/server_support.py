"""Helpers of the API tests: tokens per role, scripted agents, a client, `harness serve` runs."""

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from harness import Agent, Harness, Limits, tool
from harness.runtime.server_config import ServerConfig, ServerToken
from harness.server.app import ServerApp
from harness.server.auth import hash_token
from harness.testing import FakeReply, FunctionModel, ScriptedModel, call, reply
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


HARNESS = str(Path(sys.executable).parent / "harness")


def slow(reply: FakeReply, seconds: float) -> FakeReply:
    return dataclasses.replace(reply, delay_s=seconds)


def write_config(home: Path, base_url: str, extra: str = "") -> None:
    (home / "ws").mkdir(exist_ok=True)
    tokens = "".join(
        f'[server.tokens.{role}-user]\nsha256 = "{hash_token(token)}"\nrole = "{role}"\n'
        for role, token in TOKENS.items()
    )
    (home / "harness.toml").write_text(
        f"""
[server]
keepalive_s = 0.3

{tokens}
[models.fake]
provider = "openai"
model = "fake"
base_url = "{base_url}"

[agents.lister]
model = "fake"
tools = ["list_dir"]
workspace = "ws"

[agents.writer]
model = "fake"
tools = ["write_file"]
workspace = "ws"
approvals = {{ tools = {{ write_file = "ask" }} }}
{extra}"""
    )


def env_for(home: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200", **more}
    for name in ("HARNESS_MODEL", "HARNESS_SERVER_TOKEN"):
        env.pop(name, None)
    return env


@contextmanager
def serving(
    home: Path,
    *args: str,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    cwd: Path | None = None,
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`harness serve` on a free port until the block ends; its stderr goes to `log` if given."""
    sink = log.open("w") if log is not None else None
    try:
        proc = subprocess.Popen(
            [HARNESS, "serve", "--port", "0", *args],
            env=env or env_for(home),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if sink is None else sink,
            text=True,
        )
    finally:
        if sink is not None:
            sink.close()  # the child has its own descriptor
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if not first.startswith("harness serve "):
        proc.kill()
        raise AssertionError(f"no start line: {first!r} {proc.communicate()}")
    url = first.split(": ", 1)[1].split(" ")[0]
    try:
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert "server stopped" in out, (out, err)


def wait_state(client: httpx.Client, run_id: str, *states: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = client.get(f"/api/runs/{run_id}").json()
        if run["state"] in states:
            return run
        time.sleep(0.05)
    raise AssertionError(f"{run_id} never reached {states}: {run}")


def frames(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """SSE frames as dicts (`comment` for `: ...` lines), one per blank line."""
    current: dict[str, str] = {}
    for line in lines:
        if not line:
            if current:
                yield current
            current = {}
        elif line.startswith(":"):
            yield {"comment": line[1:].strip()}
        else:
            key, _, value = line.partition(": ")
            current[key] = value
