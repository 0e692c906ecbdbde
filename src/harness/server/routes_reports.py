"""`/api/me`, `/api/events`, `/api/cost`, `/api/stats`, `/api/experiments`.

`/api/events` is every run's events, live; stopping an experiment is the admin verb.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import ConfigError
from harness.observability._window import parse_since
from harness.observability.cost import CostLine, CostReport, Dimension, read_cost
from harness.observability.experiments import experiment_report
from harness.observability.stats import compute_stats, stats_to_dict
from harness.server._http import APIRouter, Depends, Query, Request, StreamingResponse
from harness.server.auth import Principal, harness_of, require
from harness.server.problems import Problem
from harness.server.sse import SSE_HEADERS
from harness.store.protocol import ExperimentStop

__all__ = ["router"]

router = APIRouter(prefix="/api")
Reader = Annotated[Principal, Depends(require("read"))]
Admin = Annotated[Principal, Depends(require("admin"))]
By = Literal["model", "tool", "task_type", "agent", "variant"]
_DIMENSION: Final[dict[str, Dimension]] = {
    "model": "model",
    "tool": "tool",
    "task_type": "task-type",
    "agent": "agent",
    "variant": "variant",
}
_MAX_HOURS: Final = 72


def _when(name: str, value: str | None, now: float) -> float | None:
    """A time given as epoch seconds, an ISO date, or a span back from now (`7d`).

    Raises:
        Problem: 422, naming the parameter.
    """
    if value is None or not value.strip():
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parse_since(value, now=now).start
    except ConfigError as exc:
        raise Problem(422, f"{name}: {exc}") from exc


@router.get("/me", summary="Who the caller is")
async def me(principal: Reader) -> dict[str, Any]:
    """The caller's role and name; a cookie session also gets its CSRF token here."""
    return {"role": principal.role, "name": principal.name, "csrf": principal.csrf}


@router.get(
    "/events",
    summary="Live events of every run (Server-Sent Events)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def all_events(
    request: Request,
    principal: Reader,
    types: Annotated[str | None, Query(description="Event types, comma-separated.")] = None,
) -> StreamingResponse:
    """Every run's events from now on, whichever process executes the run."""
    state = request.app.state
    wanted = [t.strip() for t in types.split(",") if t.strip()] if types else None
    stream = state.feed.stream(state.streams, types=wanted, keepalive_s=state.config.keepalive_s)
    admitted = state.streams.admit(principal.name, stream)
    return StreamingResponse(admitted, media_type="text/event-stream", headers=SSE_HEADERS)


def _row(line: CostLine, dimension: Dimension | None) -> dict[str, Any]:
    data = line.to_dict()
    key = data.pop("key")
    tokens = data["tokens"]
    return {
        "key": key.get(_json_key(dimension)) if dimension else None,
        "runs": line.runs,
        "input_tokens": tokens["input"],
        "output_tokens": tokens["output"],
        "cost_usd": data["usd"] if data["usd"] is not None else data["usd_priced"],
        **data,
    }


def _json_key(dimension: Dimension) -> str:
    return "task_type" if dimension == "task-type" else dimension


def _cost_json(report: CostReport, by: str) -> dict[str, Any]:
    dimension = _DIMENSION[by]
    return {
        "by": by,
        "since": report.since,
        "rows": [_row(line, dimension) for line in report.lines],
        "total": _row(report.total, None),
    }


@router.get("/cost", summary="Cost of past runs, grouped")
async def cost(
    request: Request,
    _: Reader,
    by: By = "model",
    since: Annotated[str | None, Query(description="Epoch seconds, ISO date or 7d.")] = None,
    until: Annotated[str | None, Query(description="Epoch seconds or ISO date.")] = None,
) -> dict[str, Any]:
    """Runs, tokens and US dollars of the runs created in `[since, until)`, by one dimension."""
    now = time.time()
    report = await read_cost(
        harness_of(request).store,
        by=(_DIMENSION[by],),
        since=_when("since", since, now),
        until=_when("until", until, now),
    )
    return _cost_json(report, by)


@router.get("/cost/series", summary="Cost over time, by model, tool or task type")
async def cost_series(
    request: Request,
    _: Reader,
    by: Literal["model", "tool", "task_type"] = "model",
    bucket: Literal["hour", "day"] = "day",
    since: Annotated[str | None, Query(description="Default: 7d (day), 24h (hour).")] = None,
) -> dict[str, Any]:
    """Cost and tokens per bucket of time, one series per key."""
    now = time.time()
    start = _when("since", since, now) or now - (7 * 86_400 if bucket == "day" else 86_400)
    store, dimension = harness_of(request).store, _DIMENSION[by]
    points: dict[Any, list[dict[str, Any]]] = {}
    if bucket == "day":
        report = await read_cost(store, by=(dimension, "day"), since=start)
        for line in report.lines:
            _add_point(points, line, dimension, line.key.get("day"))
    else:
        hour = start - start % 3600
        if (now - hour) / 3600 > _MAX_HOURS:
            raise Problem(422, f"since: at most {_MAX_HOURS} hours of hourly buckets")
        while hour < now:
            report = await read_cost(store, by=(dimension,), since=hour, until=hour + 3600)
            for line in report.lines:
                _add_point(points, line, dimension, hour)
            hour += 3600
    series = [
        {"key": key, "points": sorted(found, key=lambda p: str(p["t"]))}
        for key, found in points.items()
    ]
    return {"by": by, "bucket": bucket, "since": start, "series": series}


def _add_point(
    points: dict[Any, list[dict[str, Any]]], line: CostLine, dimension: Dimension, t: Any
) -> None:
    row = _row(line, dimension)
    tokens = row["input_tokens"] + row["output_tokens"]
    points.setdefault(row["key"], []).append(
        {"t": t, "cost_usd": row["cost_usd"], "tokens": tokens}
    )


@router.get("/stats", summary="How past runs went")
async def stats(
    request: Request,
    _: Reader,
    since: str = "7d",
    agent: str | None = None,
    task_type: str | None = None,
) -> dict[str, Any]:
    """What `harness stats --json` prints: terminations, tool success, latency, context."""
    try:
        window = parse_since(since, now=time.time())
    except ConfigError as exc:
        raise Problem(422, f"since: {exc}") from exc
    found = await compute_stats(
        harness_of(request).store, since=window.start, agent=agent, task_type=task_type
    )
    return {"window": window.text, **stats_to_dict(found)}


@router.get("/experiments", summary="The experiments' reports")
async def experiments(request: Request, _: Reader) -> list[dict[str, Any]]:
    """One report per experiment of harness.toml, as `harness experiments report --json`.

    `stopped` is `null` while it splits runs, else the variant that gets every new run, who
    stopped it and when (`by` is `harness.toml` for a `keep` in the file).
    """
    harness = harness_of(request)
    stops = await harness.store.experiment_stops()
    return [
        await _report(request, name, stops.get(name))
        for name in sorted(harness.settings.experiments)
    ]


class StopBody(BaseModel):
    """`POST /api/experiments/{name}/stop`."""

    model_config = ConfigDict(extra="forbid")
    keep: str = Field(min_length=1, max_length=200, description="The variant to keep.")


@router.post("/experiments/{name}/stop", summary="Stop an experiment (admin)")
async def stop_experiment(
    request: Request, name: str, body: StopBody, principal: Admin
) -> dict[str, Any]:
    """Send every new run of the experiment to `keep`, in every process.

    As `harness experiments stop`: runs that have their variant keep it, and stopping
    again moves the traffic to another variant.

    Raises:
        Problem: 404 (no such experiment), 422 (no such variant), 409 (the file stops it).
    """
    harness = harness_of(request)
    experiment = harness.settings.experiments.get(name)
    if experiment is None:
        known = ", ".join(sorted(harness.settings.experiments)) or "none"
        raise Problem(404, f"there is no experiment {name!r} (experiments: {known})")
    if experiment.variant(body.keep) is None:
        names = ", ".join(v.name for v in experiment.variants)
        raise Problem(422, f"keep: experiment {name!r} has no variant {body.keep!r} ({names})")
    if experiment.keep is not None:
        raise Problem(
            409,
            f"experiment {name!r} is stopped in harness.toml (keep = {experiment.keep!r}): "
            "change the file to move its traffic",
        )
    stop = ExperimentStop(experiment=name, keep=body.keep, by=f"token:{principal.name}")
    await harness.store.stop_experiment(stop)
    return await _report(request, name, (await harness.store.experiment_stops()).get(name))


async def _report(request: Request, name: str, stop: ExperimentStop | None) -> dict[str, Any]:
    harness = harness_of(request)
    experiment = harness.settings.experiments[name]
    variants = [v.name for v in experiment.variants]
    report = (await experiment_report(harness.store, name, variants)).to_dict()
    if experiment.keep is not None:
        report["stopped"] = {"keep": experiment.keep, "by": "harness.toml", "at": None}
    elif stop is not None:
        report["stopped"] = {"keep": stop.keep, "by": stop.by, "at": stop.stopped_at}
    else:
        report["stopped"] = None
    return report
