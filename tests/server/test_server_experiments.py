"""`POST /api/experiments/NAME/stop`: the admin role's verb. An admin token stops an A/B
experiment (every new run gets the kept variant, in every process); weaker tokens, unknown
experiments and variants, and an experiment the file already stops are refused."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_support import TOKENS, bearer, server_config

from harness import Harness
from harness.runtime.settings import load_settings

STOP = "/api/experiments/refund-model/stop"


def configure(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "harness.toml").write_text(
        """
[models.alpha]
model = "alpha"
base_url = "http://127.0.0.1:9/v1"

[models.beta]
model = "beta"
base_url = "http://127.0.0.1:9/v1"

[agents.support]
model = "alpha"
tools = []

[experiments.refund-model]
task_type = "refund"
variants = { a = { model = "alpha", weight = 50 }, b = { model = "beta", weight = 50 } }
"""
    )


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[Harness, httpx.AsyncClient]]:
    from harness.server.app import create_app

    configure(tmp_path)
    settings = dataclasses.replace(load_settings(tmp_path), server=server_config())
    async with Harness(settings, store=str(tmp_path / "h.db"), execute=False) as h:
        app = create_app(h, env={})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            yield h, http
        await app.close()


async def post(http: httpx.AsyncClient, path: str, role: str, body: Any) -> httpx.Response:
    return await http.post(path, json=body, headers=bearer(role))


async def test_an_admin_token_stops_an_experiment_and_new_runs_get_the_kept_variant(
    client: tuple[Harness, httpx.AsyncClient],
) -> None:
    h, http = client
    listed = (await http.get("/api/experiments", headers=bearer("read"))).json()
    assert [(e["experiment"], e["stopped"]) for e in listed] == [("refund-model", None)]
    before = {
        (await h.get(await h.submit("support", f"t{n}", task_type="refund"))).variant
        for n in range(40)
    }
    assert before == {"a", "b"}
    done = await post(http, STOP, "admin", {"keep": "b"})
    assert done.status_code == 200, done.text
    stopped = done.json()["stopped"]
    assert (stopped["keep"], stopped["by"]) == ("b", "token:ada")
    after = {
        (await h.get(await h.submit("support", f"u{n}", task_type="refund"))).variant
        for n in range(20)
    }
    assert after == {"b"}
    [listed] = (await http.get("/api/experiments", headers=bearer("read"))).json()
    assert listed["stopped"] == stopped
    moved = await post(http, STOP, "admin", {"keep": "a"})  # stopping again moves the traffic
    assert moved.json()["stopped"]["keep"] == "a"


async def test_what_an_experiment_stop_refuses(
    client: tuple[Harness, httpx.AsyncClient],
) -> None:
    h, http = client
    for role in ("read", "operate"):
        refused = await post(http, STOP, role, {"keep": "b"})
        assert refused.status_code == 403
        assert "needs the admin role" in refused.json()["detail"]
    anonymous = await http.post(STOP, json={"keep": "b"})
    assert anonymous.status_code == 401
    missing = await post(http, "/api/experiments/nope/stop", "admin", {"keep": "b"})
    assert missing.status_code == 404
    assert "no experiment 'nope' (experiments: refund-model)" in missing.json()["detail"]
    wrong = await post(http, STOP, "admin", {"keep": "c"})
    assert wrong.status_code == 422
    assert "no variant 'c' (a, b)" in wrong.json()["detail"]
    for body in ({}, {"keep": ""}, {"keep": "b", "extra": 1}, "b"):
        assert (await post(http, STOP, "admin", body)).status_code == 422
    assert await h.store.experiment_stops() == {}  # nothing was written


async def test_an_experiment_the_file_stops_is_not_stopped_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.server.app import create_app

    configure(tmp_path)
    monkeypatch.setenv("HARNESS_EXPERIMENTS__REFUND_MODEL__KEEP", "a")
    settings = dataclasses.replace(load_settings(tmp_path), server=server_config())
    async with Harness(settings, store=str(tmp_path / "h.db"), execute=False) as h:
        app = create_app(h, env={})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            again = await post(http, STOP, "admin", {"keep": "b"})
            [listed] = (await http.get("/api/experiments", headers=bearer("admin"))).json()
        await app.close()
    assert again.status_code == 409
    assert "stopped in harness.toml (keep = 'a')" in again.json()["detail"]
    assert listed["stopped"] == {"keep": "a", "by": "harness.toml", "at": None}
    assert TOKENS["admin"] not in again.text
