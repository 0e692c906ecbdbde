"""`harness experiments list | report NAME | stop NAME --keep VARIANT`."""

from __future__ import annotations

import getpass
import json
from collections import Counter
from typing import Annotated, Any

import typer

from harness.cli.agents import print_columns
from harness.cli.app import app, fail
from harness.cli.runs import steer
from harness.errors import ConfigError
from harness.observability.experiments import ExperimentReport, VariantReport, experiment_report
from harness.runtime._agents_config import ExperimentConfig
from harness.runtime.harness import Harness
from harness.runtime.settings import Settings, load_settings
from harness.store.protocol import ExperimentStop

__all__ = ["experiments_app"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The experiment's name.")]

experiments_app = typer.Typer(
    help="A/B experiments of harness.toml: list, report, stop.", no_args_is_help=True
)
app.add_typer(experiments_app, name="experiments")


def _settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        fail(str(exc))


def _experiment(settings: Settings, name: str) -> ExperimentConfig:
    found = settings.experiments.get(name)
    if found is None:
        known = ", ".join(sorted(settings.experiments)) or "none"
        fail(f"no experiment named {name!r} in {settings.home / 'harness.toml'} (known: {known})")
    return found


@experiments_app.command("list")
def experiments_list(json_output: JsonOpt = False) -> None:
    """List the experiments: what they split, their variants, whether they run or stopped."""
    settings = _settings()

    async def read(h: Harness) -> tuple[dict[str, ExperimentStop], dict[str, Counter[str]]]:
        runs = {
            name: Counter(
                r.variant or "" for r in await h.store.list_runs(experiment=name, limit=None)
            )
            for name in settings.experiments
        }
        return await h.store.experiment_stops(), runs

    stops, runs = steer(read)
    rows = [_row(e, stops.get(e.name), runs[e.name]) for e in settings.experiments.values()]
    if json_output:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    if not rows:
        typer.echo("no experiments: add an [experiments.NAME] table to harness.toml")
        return
    table = [("NAME", "APPLIES TO", "KEY", "VARIANTS (weight: runs)", "STATUS")]
    for row in rows:
        variants = ", ".join(f"{v['name']} ({v['weight']:g}: {v['runs']})" for v in row["variants"])
        table.append((row["name"], row["applies_to"], row["key"], variants, row["status"]))
    print_columns(table)


def _row(
    experiment: ExperimentConfig, stop: ExperimentStop | None, runs: Counter[str]
) -> dict[str, Any]:
    if experiment.keep is not None:
        status = f"stopped: all to {experiment.keep} (harness.toml)"
    elif stop is not None:
        status = f"stopped: all to {stop.keep} (by {stop.by})"
    else:
        status = "running"
    target = (
        f"task type {experiment.task_type}" if experiment.task_type else f"agent {experiment.agent}"
    )
    return {
        "name": experiment.name,
        "applies_to": target,
        "key": experiment.key,
        "variants": [
            {"name": v.name, "weight": v.weight, "runs": runs.get(v.name, 0)}
            for v in experiment.variants
        ],
        "status": status,
    }


@experiments_app.command("report")
def experiments_report(name: NameArg, json_output: JsonOpt = False) -> None:
    """Report how each variant did, and whether their completion rates differ at 95 %.

    Per variant: runs, completion rate with its Wilson 95 % interval, termination reasons,
    steps, tokens, cost per run and per completed run, latency p50/p95.
    """
    settings = _settings()
    variants = (
        [v.name for v in settings.experiments[name].variants]
        if name in settings.experiments
        else []
    )
    report = steer(lambda h: experiment_report(h.store, name, variants))
    if not variants and not any(v.runs for v in report.variants):
        _experiment(settings, name)  # neither in the file nor in the store: say so
    if json_output:
        typer.echo(json.dumps(report.to_dict()))
        return
    print_report(report)


def print_report(report: ExperimentReport) -> None:
    """The report as a table, then the termination reasons and the significance line."""
    typer.echo(f"experiment {report.experiment}")
    table = [
        (
            "VARIANT",
            "RUNS",
            "ENDED",
            "COMPLETED",
            "RATE",
            "95% CI",
            "STEPS",
            "TOKENS/RUN",
            "$/RUN",
            "$/COMPLETED",
            "P50 S",
            "P95 S",
        )
    ]
    table += [_cells(v) for v in report.variants]
    print_columns(table)
    for v in report.variants:
        reasons = ", ".join(f"{reason} {count}" for reason, count in v.terminations.items())
        typer.echo(f"{v.variant}: {reasons or 'no ended runs'}")
    typer.echo(report.significance.line)


def _cells(v: VariantReport) -> tuple[str, ...]:
    interval = (
        "-" if v.interval is None else f"{v.interval[0] * 100:.1f}–{v.interval[1] * 100:.1f} %"
    )
    return (
        v.variant,
        str(v.runs),
        str(v.ended),
        str(v.completed),
        "-" if v.completion_rate is None else f"{v.completion_rate * 100:.1f} %",
        interval,
        _num(v.steps_mean, 2),
        _num(v.tokens_per_run, 0),
        _usd(v.cost_per_run),
        _usd(v.cost_per_completed),
        _num(v.latency_p50_s, 2),
        _num(v.latency_p95_s, 2),
    )


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:.6f}" if value < 0.01 else f"${value:.4f}"


@experiments_app.command("stop")
def experiments_stop(
    name: NameArg,
    keep: Annotated[str, typer.Option(help="The variant that gets every new run.")],
) -> None:
    """Stop an experiment: every new run gets the kept variant (in every process)."""
    settings = _settings()
    experiment = _experiment(settings, name)
    if experiment.variant(keep) is None:
        names = ", ".join(v.name for v in experiment.variants)
        fail(f"--keep: experiment {name!r} has no variant {keep!r} (variants: {names})")
    stop = ExperimentStop(experiment=name, keep=keep, by=f"user:{getpass.getuser()}")
    steer(lambda h: h.store.stop_experiment(stop))
    typer.echo(f"experiment {name} stopped: every new run gets variant {keep}")
