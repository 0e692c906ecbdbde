"""Stopped A/B experiments: one row per experiment, the variant that keeps all traffic."""

from __future__ import annotations

from typing import Final

from harness.store._sql import Db
from harness.store.protocol import ExperimentStop

__all__ = ["stop", "stops"]

_COLUMNS: Final = "experiment, keep, stopped_by, stopped_at"


def stop(db: Db, stop: ExperimentStop, now: float) -> None:
    """Record `stop`, replacing an earlier stop of the same experiment."""
    db.execute(
        f"INSERT INTO experiment_stops ({_COLUMNS}) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (experiment) DO UPDATE SET keep = excluded.keep, "
        "stopped_by = excluded.stopped_by, stopped_at = excluded.stopped_at",
        (stop.experiment, stop.keep, stop.by, now),
    )


def stops(db: Db) -> dict[str, ExperimentStop]:
    """Every recorded stop, by experiment."""
    rows = db.query(f"SELECT {_COLUMNS} FROM experiment_stops ORDER BY experiment")
    return {
        str(row[0]): ExperimentStop(
            experiment=str(row[0]), keep=str(row[1]), by=str(row[2]), stopped_at=float(row[3])
        )
        for row in rows
    }
