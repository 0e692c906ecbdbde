"""What a person sees of a handoff, live and as JSON lines."""

import io
import json

import pytest

from harness.cli.render import JsonRenderer, LiveRenderer
from harness.core import RunEvent
from harness.core.events import Handoff


def event(reason: str | None) -> RunEvent:
    payload = Handoff(
        step=2, call_id="c1", from_agent="triage", to_agent="billing", reason=reason, count=1
    )
    return RunEvent(run_id="run_1", seq=9, ts=0.0, payload=payload)


def test_a_handoff_shows_who_handed_over_to_whom(capsys: pytest.CaptureFixture[str]) -> None:
    LiveRenderer()(event("a double [b]charge[/b]"))
    assert " ".join(capsys.readouterr().out.split()) == (
        "⇢ handoff triage → billing (a double [b]charge[/b])"
    )
    LiveRenderer()(event(None))
    assert " ".join(capsys.readouterr().out.split()) == "⇢ handoff triage → billing"


def test_a_handoff_is_one_json_line() -> None:
    out = io.StringIO()
    JsonRenderer(out)(event("why"))
    line = json.loads(out.getvalue())
    assert (line["type"], line["payload"]["to_agent"], line["seq"]) == ("handoff", "billing", 9)
