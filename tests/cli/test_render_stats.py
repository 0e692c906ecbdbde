"""How `harness stats` draws: bars to an eighth of a cell, a sparkline scaled from zero."""

import io

from harness.cli.render import print_stats, sparkline
from harness.observability.stats import Share, Spread, Stats, StepTokens, ToolStats

NONE = Spread(count=0, p50=None, p95=None)


def drawn(stats: Stats) -> list[str]:
    out = io.StringIO()
    print_stats(stats, "in the last 7d", file=out, width=120)
    return out.getvalue().splitlines()


def stats(**fields: object) -> Stats:
    empty: dict[str, object] = {
        "since": None,
        "agent": None,
        "task_type": None,
        "runs": 0,
        "steps": 0,
        "tool_calls": 0,
        "tool_calls_per_step": None,
        "tools": (),
        "context_tokens": (),
        "step_latency_s": NONE,
        "models": (),
        "terminations": (),
        "states": (),
    }
    return Stats(**{**empty, **fields})  # type: ignore[arg-type]


def test_a_sparkline_scales_from_zero_to_the_largest_value() -> None:
    assert sparkline([]) == ""
    assert sparkline([0, 0]) == "▁▁"
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert sparkline([700, 700]) == "██"
    assert sparkline([100, 220, 350]) == "▃▅█"


def test_bars_are_drawn_to_an_eighth_of_a_cell() -> None:
    shares = (
        Share(name="final_answer", count=7, share=0.7),
        Share(name="max_steps", count=3, share=0.3),
    )
    lines = drawn(stats(runs=10, steps=10, terminations=shares))
    final = next(line for line in lines if line.startswith("final_answer"))
    stopped = next(line for line in lines if line.startswith("max_steps"))
    # 0.7 x 20 cells = 14 full; 0.3 x 20 = 6 full
    assert final.split()[1] == "█" * 14 + "·" * 6
    assert stopped.split()[1] == "█" * 6 + "·" * 14


def test_a_bar_ends_in_the_eighth_of_a_cell_nearest_its_share() -> None:
    shares = (
        Share(name="final_answer", count=21, share=0.71),
        Share(name="max_steps", count=9, share=0.29),
    )
    lines = drawn(stats(runs=30, steps=30, terminations=shares))
    final = next(line for line in lines if line.startswith("final_answer"))
    stopped = next(line for line in lines if line.startswith("max_steps"))
    # 0.71 x 160 eighths = 113.6 -> 114 = 14 cells and 2 eighths; 0.29 x 160 = 46.4 -> 46
    assert final.split()[1] == "█" * 14 + "▎" + "·" * 5
    assert stopped.split()[1] == "█" * 5 + "▊" + "·" * 14


def test_tool_success_is_split_into_successes_and_failures() -> None:
    tool = ToolStats(
        tool="bash",
        calls=4,
        ok=3,
        failed=1,
        not_run=2,
        calls_per_step=0.5,
        success_rate=0.75,
        duration_s=Spread(count=4, p50=0.004, p95=1.5),
    )
    lines = drawn(stats(runs=1, steps=8, tool_calls=4, tool_calls_per_step=0.5, tools=(tool,)))
    row = next(line for line in lines if line.startswith("bash"))
    assert row.split() == [
        "bash",
        "4",
        "0.50",
        "█" * 15 + "░" * 5,
        "75%",
        "4.00",
        "ms",
        "1.50",
        "s",
        "2",
    ]


def test_the_context_trend_names_its_ends() -> None:
    points = tuple(
        StepTokens(step=i + 1, runs=3, median_input_tokens=v)
        for i, v in enumerate([1000.0, 2000.0, 8000.0, 4000.0])
    )
    lines = drawn(stats(runs=3, steps=12, context_tokens=points))
    # 7 levels above ▁: 0.875, 1.75, 7 and 3.5 of them, halves up: ▂ ▃ █ ▅
    assert lines[-1].split() == [
        "▂▃█▅",
        "step",
        "1:",
        "1,000",
        "→",
        "step",
        "4:",
        "4,000",
        "·",
        "max",
        "8,000",
    ]


def test_nothing_to_show_is_said_in_words() -> None:
    assert drawn(stats(agent="ops", task_type="refund")) == [
        "no runs in the last 7d · agent ops · task type refund"
    ]
