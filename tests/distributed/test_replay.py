"""The versioning guard: recorded histories of `harness.run` replay on the current workflow.

tests/fixtures/temporal/ holds histories of runs that went through every path of the
workflow (model and tool calls, retried and at-most-once tools, a pause at a step boundary
and one while a call waited for approval, resume, approval, a cancel while a call ran, a
handoff, two child workflows at once, a wait for a message woken by a signal, a long
run continued as new: each of its executions is a file).
Temporal replays a run's history on whatever worker takes it over, so a change of the
workflow code that these no longer replay on would break runs in flight when it is
deployed. Re-record with `python tests/distributed/histories.py` (see its docstring).
"""

import json
from pathlib import Path

import pytest
from histories import FIXTURES, SCENARIOS, replay
from temporalio.workflow import NondeterminismError

HISTORIES = sorted(FIXTURES.glob("*.json"))


def test_every_scenario_has_a_recorded_history() -> None:
    missing = [s for s in SCENARIOS if not any(p.stem.startswith(f"{s}-") for p in HISTORIES)]
    assert not missing, f"record them: python {Path(__file__).parent / 'histories.py'}"


@pytest.mark.parametrize("history", HISTORIES, ids=[path.stem for path in HISTORIES])
async def test_a_recorded_history_replays_on_the_current_workflow(
    history: Path, tmp_path: Path
) -> None:
    await replay(history, tmp_path)


async def test_a_history_the_workflow_did_not_make_fails_to_replay(tmp_path: Path) -> None:
    """The guard is not vacuous: a history whose first model call is a tool call fails."""
    source = next(path for path in HISTORIES if path.stem.startswith("approve-pause-resume-"))
    recorded = json.loads(source.read_text(encoding="utf-8"))
    scheduled = [e for e in recorded["events"] if "activityTaskScheduledEventAttributes" in e]
    activity = scheduled[0]["activityTaskScheduledEventAttributes"]["activityType"]
    assert activity["name"] == "harness.model_call"
    activity["name"] = "harness.tool_call"
    changed = tmp_path / source.name
    changed.write_text(json.dumps(recorded), encoding="utf-8")
    with pytest.raises(NondeterminismError):
        await replay(changed, tmp_path / "home")
