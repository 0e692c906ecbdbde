"""`POST /api/runs` with `tools` picks from the registry as `harness run --tools` does:
built-in and `[tools.NAME]` tools by name, `tag:TAG`, globs; what does not exist is a 422
that lists what does."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx
import pytest
from server_support import bearer, server_config

from harness import Harness
from harness.runtime.settings import load_settings
from harness.testing import FakeOpenAIServer, FakeReply

TOOLS = '''
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
'''


async def test_an_ad_hoc_run_gets_registry_tools_by_name_tag_and_glob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.server.app import create_app

    (tmp_path / "api_word_tools.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        monkeypatch.delenv(name, raising=False)
    script = [FakeReply.tool_call("count", {"text": "one two three"}), FakeReply.text("3")]
    with FakeOpenAIServer(script) as server:
        (tmp_path / "harness.toml").write_text(
            f'[models.fake]\nmodel = "fake"\nbase_url = "{server.base_url}"\n\n'
            '[defaults]\nmodel = "fake"\n\n'
            '[tools.count]\nfunction = "api_word_tools:word_count"\ntags = ["text"]\n'
        )
        settings = dataclasses.replace(load_settings(tmp_path), server=server_config())
        async with Harness(settings, store=str(tmp_path / "h.db")) as h:
            app = create_app(h, env={})
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                made = await http.post(
                    "/api/runs",
                    json={"task": "count", "tools": ["tag:text", "list_*"]},
                    headers=bearer("operate"),
                )
                assert made.status_code == 201, made.text
                result = await h.wait(made.json()["run_id"], timeout=30)
                refused = [
                    (
                        await http.post(
                            "/api/runs", json={"task": "x", "tools": t}, headers=bearer("operate")
                        )
                    ).json()["detail"]
                    for t in (["nope"], ["github.search"], ["count", "count"])
                ]
            await app.close()
        offered = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert sorted(offered) == ["count", "list_dir", "read_result"]  # read_result: always
    assert result.output == "3"
    assert "tools: no tool is named 'nope' (built-in: " in refused[0]
    assert "[tools.NAME]: count" in refused[0]
    assert "MCP server 'github', which is not configured" in refused[1]
    assert "tools: 'count' is named twice" in refused[2]
