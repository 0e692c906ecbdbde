"""examples/handoff_triage.py runs: against its scripted models, and over HTTP against a
model server (the fake OpenAI-compatible one)."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
import handoff_triage

EXAMPLES = Path(handoff_triage.__file__).parent


def test_the_example_runs_as_a_script_with_its_scripted_models(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "handoff_triage.py"), "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "▶ triage (scripted-triage)",
        "  ⇢ triage hands over to billing: a question about a charge",
        "▶ billing (scripted-refund_status)",
    ]
    assert "billing answered: Here is what I found: order 42: charged twice" in done.stdout
    assert (tmp_path / "harness.db").exists()  # a durable run, in the home it was given


async def test_the_example_runs_against_a_model_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.testing import FakeOpenAIServer, FakeReply

    monkeypatch.delenv("HARNESS_STORE", raising=False)
    replies = [
        FakeReply.tool_call("transfer_to_shipping", {"reason": "parcel"}, id="h1"),
        FakeReply.tool_call("track_parcel", {"order": 7}, id="t1"),
        FakeReply.text("It arrives tomorrow."),
    ]
    with FakeOpenAIServer(replies) as server:
        result = await handoff_triage.main(
            "where is order 7?", home=tmp_path, model="openai:m", base_url=server.base_url
        )
        bodies = [r.body for r in server.requests]
    assert result.output == "It arrives tomorrow."
    assert "shipping answered: It arrives tomorrow." in capsys.readouterr().out
    names = [[t["function"]["name"] for t in body["tools"]] for body in bodies]
    assert names[0] == ["transfer_to_billing", "transfer_to_shipping"]
    assert names[1] == ["track_parcel", "read_result"]
    assert bodies[1]["messages"][0]["content"].startswith("You are shipping support.")
