"""Fixtures of the dashboard's browser tests: a real `harness serve`, a scripted model, chromium.

`harness serve` runs as a subprocess on 127.0.0.1 (a free port) over a SQLite store in a
temporary HARNESS_HOME. Its agent `support` talks to a `FakeOpenAIServer` in this process,
whose replies come from `Brain`: a script per task, picked by a marker in the task's text,
that may wait on a `threading.Event` so a test can watch a run while it is under way.

Chromium is Debian's (`/usr/bin/chromium`, installed by `.ci/run`), driven by Playwright
without any browser download. The tests fail without it, never turn into green skips; a
developer without chromium can opt out with HARNESS_ALLOW_NO_BROWSER=1 (they then skip).
Screenshots go to HARNESS_TEST_ARTIFACTS when set, else to a temporary directory.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import (
    ADMIN_TOKEN,
    CONFIG,
    HARNESS,
    LAPTOP,
    READ_TOKEN,
    TOOLS,
    Brain,
    Page,
    Server,
    wait_until,
)

from harness.testing import FakeOpenAIServer

CHROMIUM = "/usr/bin/chromium"


def _need_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    reason = f"the browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)"
    if os.environ.get("HARNESS_ALLOW_NO_BROWSER") == "1":
        pytest.skip(f"{reason}; skipped because HARNESS_ALLOW_NO_BROWSER=1")
    pytest.fail(f"{reason}. Set HARNESS_ALLOW_NO_BROWSER=1 to skip these tests instead.")


def _start(home: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """Start `harness serve` on a free port; its URL from the line it prints first."""
    with (home / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [HARNESS, "serve", "--port", "0", "--concurrency", "8"],
            env=env,
            cwd=home,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "http://" not in line:
        _stop(proc)
        log_text = (home / "serve.log").read_text()[-3000:]
        raise AssertionError(f"harness serve did not start: {line!r}\n{log_text}")
    url = line.split("http://", 1)[1].split()[0]
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # never let the pipe fill
    return proc, f"http://{url}"


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`harness serve` with the agent `support`, answered by a `Brain`, for the module."""
    home = tmp_path_factory.mktemp("serve-home")
    site = home / "site"
    site.mkdir()
    (site / "shop_tools.py").write_text(TOOLS)
    brain = Brain()
    with FakeOpenAIServer(brain) as model:
        read_hash = hashlib.sha256(READ_TOKEN.encode()).hexdigest()
        (home / "harness.toml").write_text(
            CONFIG.format(base_url=model.base_url, read_hash=read_hash)
        )
        path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "HARNESS_HOME": str(home), "PYTHONPATH": path}
        env["HARNESS_SERVER_TOKEN"] = ADMIN_TOKEN
        for name in ("HARNESS_MODEL", "HARNESS_STORE"):
            env.pop(name, None)
        proc, url = _start(home, env)
        try:
            served = Server(url=url, home=home, brain=brain)
            wait_until(lambda: _healthy(url), "harness serve to answer /healthz")
            yield served
        finally:
            brain.release_all()
            _stop(proc)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError):
        return False


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright, for one module.

    Playwright's sync API runs an event loop in this thread while it is started: it must be
    stopped before the suite's asyncio tests run in the same process.
    """
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: HARNESS_TEST_ARTIFACTS, else a temporary directory."""
    given = os.environ.get("HARNESS_TEST_ARTIFACTS")
    if given:
        path = Path(given) / "dashboard"
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("dashboard-screenshots")


@pytest.fixture
def open_page(browser: Any, server: Server, artifacts: Path) -> Iterator[Callable[..., Page]]:
    """Open a tab (laptop size unless told) in a fresh context: no cookies from other tests."""
    contexts: list[Any] = []
    pages: list[Page] = []

    def open_(viewport: dict[str, int] = LAPTOP) -> Page:
        context = browser.new_context(viewport=viewport)
        contexts.append(context)
        page = Page(context.new_page(), server, artifacts)
        pages.append(page)
        return page

    yield open_
    for context in contexts:
        context.close()
    for page in pages:
        assert page.dialogs == [], f"a dialog opened: {page.dialogs}"
        assert page.errors == [], f"the page threw: {page.errors}"
