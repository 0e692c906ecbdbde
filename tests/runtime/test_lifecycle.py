import itertools

import pytest

from harness.errors import InvalidTransition
from harness.runtime.lifecycle import TERMINAL, TRANSITIONS, RunState, check_transition

S = RunState

LEGAL = {
    (S.PENDING, S.RUNNING), (S.PENDING, S.CANCELLED),
    (S.RUNNING, S.WAITING_TOOL), (S.RUNNING, S.PAUSED), (S.RUNNING, S.COMPLETED),
    (S.RUNNING, S.FAILED), (S.RUNNING, S.CANCELLED),
    (S.WAITING_TOOL, S.RUNNING), (S.WAITING_TOOL, S.PAUSED), (S.WAITING_TOOL, S.FAILED),
    (S.WAITING_TOOL, S.CANCELLED),
    (S.PAUSED, S.PENDING), (S.PAUSED, S.CANCELLED),
}  # fmt: skip


def test_the_table_is_exactly_the_design() -> None:
    table = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert table == LEGAL
    assert set(TRANSITIONS) == set(RunState)
    assert frozenset({S.COMPLETED, S.FAILED, S.CANCELLED}) == TERMINAL


@pytest.mark.parametrize(("current", "target"), sorted(LEGAL))
def test_every_legal_move_passes(current: RunState, target: RunState) -> None:
    check_transition("run_1", current, target, verb="move")


ILLEGAL = sorted(set(itertools.product(RunState, RunState)) - LEGAL)


@pytest.mark.parametrize(("current", "target"), ILLEGAL)
def test_every_other_move_raises(current: RunState, target: RunState) -> None:
    with pytest.raises(InvalidTransition, match=f"cannot move run run_1: it is {current.value}"):
        check_transition("run_1", current, target, verb="move")


def test_the_message_names_the_verb_the_run_and_its_state() -> None:
    with pytest.raises(InvalidTransition) as caught:
        check_transition("run_R", S.COMPLETED, S.PAUSED, verb="pause")
    assert str(caught.value) == "cannot pause run run_R: it is COMPLETED"
