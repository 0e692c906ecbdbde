"""What the dashboard's browser tests share: the scripted model, the server's client, a tab."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.testing import FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")
ADMIN_TOKEN = "hs_admin_token_of_the_browser_tests"
READ_TOKEN = "hs_read_token_of_the_browser_tests"
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

TOOLS = '''
import os
import time
from pathlib import Path

from harness import tool


@tool(side_effects="none")
def check_stock(item: str) -> str:
    """Ask the warehouse how many of an item are in stock (it answers when the test lets it)."""
    answered = Path(os.environ["HARNESS_HOME"]) / f"stock-{item}"
    deadline = time.monotonic() + 25  # within the default tool timeout (30 s)
    while not answered.exists():
        if time.monotonic() > deadline:
            return "the warehouse did not answer"
        time.sleep(0.05)
    return f"{item}: 4 in stock"


@tool(side_effects="none")
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return f"order {order_id}: 3 items, shipped on Monday, total 120.50 EUR"


@tool(side_effects="mutating")
def refund(order_id: str, amount: float) -> str:
    """Refund an order."""
    return f"refunded {amount} on order {order_id}"
'''

CONFIG = """
[models.fast]
model = "gpt-4.1-mini"
base_url = "{base_url}"
prices = {{ input = 2.0, output = 8.0 }}
max_retries = 0

[models.smart]
model = "gpt-4.1"
base_url = "{base_url}"
prices = {{ input = 5.0, output = 20.0 }}
max_retries = 0

[agents.support]
description = "Answers questions about orders"
model = "fast"
instructions = "You answer questions about orders."
tools = ["shop_tools:lookup_order", "shop_tools:refund", "shop_tools:check_stock"]
limits = {{ max_steps = 6, max_tokens = 10000, max_cost_usd = 0.01, max_tool_calls = 5 }}
approvals = {{ tools = {{ refund = "ask" }} }}

[agents.researcher]
description = "Finds out about one order"
model = "fast"
tools = ["shop_tools:lookup_order"]

[agents.lead]
description = "Splits the work"
model = "fast"
tools = ["agent:researcher"]
handoffs = ["support"]

[[triggers]]
name = "followup"
on = "run_finished"
match = {{ task_type = "escalation" }}
start = "researcher"
task = "[followup] check how run {{run_id}} ended"

[task_types.triage]
agent = "support"

[experiments.triage-model]
description = "Is the bigger model worth it for triage?"
task_type = "triage"
variants = {{ a = {{ model = "fast", weight = 50 }}, b = {{ model = "smart", weight = 50 }} }}

[server]
keepalive_s = 1.0

[server.tokens.reader]
sha256 = "{read_hash}"
role = "read"
"""

Script = Callable[[int], FakeReply]


@dataclass
class Brain:
    """The model's mind: `on(marker, script)` answers tasks holding `marker`, step by step.

    A script gets the step number (1 for the first model call of the run) and returns the
    reply; it may block on a gate (`gate()`), which `release_all` opens at the end.
    """

    scripts: dict[str, Script] = field(default_factory=dict[str, Script])
    gates: list[threading.Event] = field(default_factory=list[threading.Event])

    def on(self, marker: str, script: Script) -> None:
        self.scripts[marker] = script

    def gate(self) -> threading.Event:
        event = threading.Event()
        self.gates.append(event)
        return event

    def release_all(self) -> None:
        for event in self.gates:
            event.set()

    def __call__(self, body: Any) -> FakeReply:
        messages = body["messages"]
        task = next((m["content"] for m in messages if m["role"] == "user"), "") or ""
        step = 1 + sum(1 for m in messages if m["role"] == "assistant")
        for marker, script in self.scripts.items():
            if marker in str(task):
                return script(step)
        return FakeReply.text("nothing scripted for this task")


def wait_until(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll `check` until it returns something true (the bound only keeps a broken test short)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Server:
    """A running `harness serve`: its URL and a small API client (Bearer, admin)."""

    url: str
    home: Path
    brain: Brain

    def call(self, method: str, path: str, body: Any = None, token: str = ADMIN_TOKEN) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def submit(self, task: str, **options: Any) -> str:
        body = {"task": task, "agent": "support", **options}
        return self.call("POST", "/api/runs", body)["run_id"]

    def run(self, run_id: str) -> dict[str, Any]:
        return self.get(f"/api/runs/{run_id}")

    def wait_state(self, run_id: str, *states: str) -> dict[str, Any]:
        return wait_until(
            lambda: (r := self.run(run_id))["state"] in states and r, f"{run_id} in {states}"
        )


class Page:
    """A browser tab on the server, with what every test checks: no script ran from data."""

    def __init__(self, page: Any, server: Server, artifacts: Path) -> None:
        self.page = page
        self.server = server
        self.artifacts = artifacts
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.set_default_timeout(30_000)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def login(self, token: str = ADMIN_TOKEN) -> None:
        self.page.goto(self.server.url + "/")
        self.page.wait_for_url("**/login**")
        self.page.get_by_label("Token").fill(token)
        self.page.get_by_role("button", name="Log in").click()
        self.page.wait_for_selector("[data-nav='runs'][aria-current='page']")

    def goto(self, path: str) -> None:
        self.page.goto(self.server.url + path)

    def shot(self, name: str) -> Path:
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path
