"""Fixtures of the API tests: a Harness with scripted agents, its app, a client."""

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from server_support import Api, Gate, agents, server_config

from harness import Harness
from harness.runtime import Settings
from harness.server.app import create_app


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
