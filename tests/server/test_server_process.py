"""`harness serve` as a real process on 127.0.0.1: live events, other processes, shutdown."""

import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_support import (
    HARNESS,
    TOKENS,
    bearer,
    env_for,
    frames,
    serving,
    slow,
    wait_state,
    write_config,
)

from harness.testing import FakeOpenAIServer, FakeReply

BUDGETED = """
[agents.budgeted]
model = "fake"
tools = ["list_dir"]
workspace = "ws"
limits = { max_steps = 7, max_tokens = 5000, max_tool_calls = 9 }

[task_types.capped]
agent = "budgeted"
limits = { max_cost_usd = 0.25, max_seconds = 600 }
"""

READER = """
[agents.reader]
model = "fake"
tools = ["read_file"]
workspace = "ws"
"""


def test_live_events_keep_alives_and_resumption_over_uvicorn(tmp_path: Path) -> None:
    replies = [slow(FakeReply.tool_call("list_dir", {}), 0.8) for _ in range(3)]
    replies.append(slow(FakeReply.text("listed"), 0.8))
    with (
        FakeOpenAIServer(replies) as model,
        httpx.Client(timeout=30) as plain,
        ExitStack() as stack,
    ):
        write_config(tmp_path, model.base_url)
        with serving(tmp_path) as (url, _):
            client = stack.enter_context(
                httpx.Client(base_url=url, headers=bearer("read"), timeout=30)
            )
            operator = {**bearer("operate")}
            made = plain.post(
                f"{url}/api/runs", json={"task": "list", "agent": "lister"}, headers=operator
            )
            assert made.status_code == 201, made.text
            run_id = made.json()["run_id"]
            seen: list[dict[str, str]] = []
            live_while_running = False
            with client.stream("GET", f"/api/runs/{run_id}/events") as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                for frame in frames(stream.iter_lines()):
                    seen.append(frame)
                    if frame.get("event") == "tool_completed":
                        live_while_running = (
                            client.get(f"/api/runs/{run_id}").json()["state"] == "RUNNING"
                        )
                        break
            assert live_while_running  # events came as the run went, not after it
            ids = [int(f["id"]) for f in seen if "id" in f]
            assert ids == list(range(1, len(ids) + 1))
            headers = {"Last-Event-ID": str(ids[-1])}
            rest: list[dict[str, str]] = []
            with client.stream("GET", f"/api/runs/{run_id}/events", headers=headers) as stream:
                rest = list(frames(stream.iter_lines()))
            more = [int(f["id"]) for f in rest if "id" in f]
            assert more == list(range(ids[-1] + 1, ids[-1] + 1 + len(more)))
            assert rest[-1] == {"event": "end", "data": "{}"}
            ended = [f for f in rest if f.get("event") == "run_finished"]
            assert len(ended) == 1
            kept = [f for f in seen + rest if f.get("comment") == "keep-alive"]
            assert kept  # the model's 0.8 s pauses are longer than keepalive_s (0.3)
            run = client.get(f"/api/runs/{run_id}").json()
            assert run["state"] == "COMPLETED"
            assert run["last_seq"] == more[-1]


def test_a_run_shows_the_limits_of_its_agent_task_type_and_overrides(tmp_path: Path) -> None:
    with FakeOpenAIServer([FakeReply.text("ok")] * 3) as model, ExitStack() as stack:
        write_config(tmp_path, model.base_url, BUDGETED)
        with serving(tmp_path) as (url, _):
            client = stack.enter_context(
                httpx.Client(base_url=url, headers=bearer("operate"), timeout=30)
            )
            plain = client.post("/api/runs", json={"task": "a", "agent": "budgeted"}).json()
            typed = client.post(
                "/api/runs", json={"task": "b", "task_type": "capped", "max_steps": 3}
            ).json()
            run = wait_state(client, plain["run_id"], "COMPLETED")
            assert run["max_steps"] == 7  # from [agents.budgeted], not only from overrides
            assert run["limits"] == {
                "max_steps": 7,
                "max_tokens": 5000,
                "max_cost_usd": None,
                "max_seconds": 3600.0,  # the built-in default
                "max_tool_calls": 9,
            }
            run = wait_state(client, typed["run_id"], "COMPLETED")
            assert run["limits"] == {
                "max_steps": 3,  # the request's max_steps over everything
                "max_tokens": 5000,
                "max_cost_usd": 0.25,  # [task_types.capped] over the agent
                "max_seconds": 600.0,
                "max_tool_calls": 9,
            }
            listed = client.get("/api/runs").json()["runs"]
            assert {r["run_id"]: r["limits"]["max_steps"] for r in listed} == {
                plain["run_id"]: 7,
                typed["run_id"]: 3,
            }


def test_submit_takes_the_options_of_harness_run(tmp_path: Path) -> None:
    # No agent: an ad-hoc one with the built-in tools listed, the model named, in the
    # server's directory (its workspace); priority, task type and max_steps as given.
    replies = [FakeReply.tool_call("list_dir", {}), FakeReply.text("listed")]
    with FakeOpenAIServer(replies) as model, ExitStack() as stack:
        write_config(tmp_path, model.base_url)
        (tmp_path / "ws" / "seen.txt").write_text("")
        with serving(tmp_path, cwd=tmp_path / "ws") as (url, _):
            client = stack.enter_context(
                httpx.Client(base_url=url, headers=bearer("operate"), timeout=30)
            )
            body = {
                "task": "list the files",
                "tools": ["list_dir"],
                "model": "fake",
                "priority": 7,
                "task_type": "chores",
                "max_steps": 4,
            }
            made = client.post("/api/runs", json=body)
            assert made.status_code == 201, made.text
            run = wait_state(client, made.json()["run_id"], "COMPLETED")
    assert run["result"] == "listed"
    assert (run["agent"], run["priority"], run["task_type"]) == ("api", 7, "chores")
    assert run["max_steps"] == 4
    offered = {t["function"]["name"] for t in model.requests[0].body["tools"]}
    assert offered == {"list_dir", "read_result"}  # read_result comes with every agent
    assert "seen.txt" in model.requests[1].body["messages"][-1]["content"]


class SecondCallWaits:
    """A model whose second call waits until the test has seen, on the run's event stream,
    the step it belongs to (its `model_called`) after the first step's tool result. Without
    live steps they commit only once the model replies, and the reply says it timed out.
    """

    def __init__(self) -> None:
        self.seen = threading.Event()

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        if not any(m.get("role") == "tool" for m in body["messages"]):
            return FakeReply.tool_call("list_dir", {})
        return FakeReply.text(f"seen live: {self.seen.wait(20)}")

    def follow(self, client: httpx.Client, run_id: str) -> list[str]:
        """The run's event types, from its stream; opens the gate at the second call."""
        kinds: list[str] = []
        with client.stream("GET", f"/api/runs/{run_id}/events") as stream:
            for frame in frames(stream.iter_lines()):
                if "event" not in frame:
                    continue
                kinds.append(frame["event"])
                step = json.loads(frame["data"]).get("payload", {}).get("step")
                if frame["event"] == "model_called" and step == 2:
                    assert "tool_completed" in kinds
                    assert kinds.count("model_responded") == 1  # of step 1 only
                    self.seen.set()
        return kinds


def test_serve_shows_a_model_call_and_a_safe_tool_result_while_the_model_thinks(
    tmp_path: Path,
) -> None:
    model_script = SecondCallWaits()
    with FakeOpenAIServer(model_script) as model, ExitStack() as stack:
        write_config(tmp_path, model.base_url)
        with serving(tmp_path) as (url, _):
            client = stack.enter_context(
                httpx.Client(base_url=url, headers=bearer("operate"), timeout=30)
            )
            run_id = client.post("/api/runs", json={"task": "list", "agent": "lister"}).json()[
                "run_id"
            ]
            kinds = model_script.follow(client, run_id)
            run = wait_state(client, run_id, "COMPLETED")
            assert run["result"] == "seen live: True"
            assert kinds[-1] == "end"


@pytest.fixture
def worker(tmp_path: Path, store_target: str) -> Iterator[dict[str, str]]:
    env = env_for(tmp_path, HARNESS_STORE=store_target)
    proc = subprocess.Popen(
        [HARNESS, "worker", "--concurrency", "4"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    yield env
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert "worker stopped" in out, err


def test_a_server_that_does_not_execute_streams_runs_another_process_executes(
    tmp_path: Path, worker: dict[str, str]
) -> None:
    replies = [
        slow(FakeReply.tool_call("list_dir", {}), 0.5),
        slow(FakeReply.text("from the worker"), 0.5),
    ]
    with FakeOpenAIServer(replies) as model, ExitStack() as stack:
        write_config(tmp_path, model.base_url)
        with serving(tmp_path, "--no-execute", env=worker) as (url, _):
            client = stack.enter_context(
                httpx.Client(base_url=url, headers=bearer("operate"), timeout=30)
            )
            kinds: list[str] = []
            with client.stream(
                "GET", "/api/events", params={"types": "run_started,tool_completed,run_finished"}
            ) as feed:
                run_id = client.post("/api/runs", json={"task": "list", "agent": "lister"}).json()[
                    "run_id"
                ]
                for frame in frames(feed.iter_lines()):
                    if "event" in frame:
                        assert frame["id"].startswith(f"{run_id}:")
                        kinds.append(frame["event"])
                    if "run_finished" in kinds:
                        break
            assert kinds == ["run_started", "tool_completed", "run_finished"]
            with client.stream("GET", f"/api/runs/{run_id}/events") as stream:
                whole = [f for f in frames(stream.iter_lines()) if "event" in f]
            assert whole[-1]["event"] == "end"
            assert whole[-2]["event"] == "run_finished"
            run = client.get(f"/api/runs/{run_id}").json()
            assert run["result"] == "from the worker"
            assert run["owner"] is None or "worker" not in run["owner"]


def test_a_worker_with_live_steps_shows_the_model_call_while_it_thinks(
    tmp_path: Path, store_target: str
) -> None:
    model_script = SecondCallWaits()
    env = env_for(tmp_path, HARNESS_STORE=store_target)
    with FakeOpenAIServer(model_script) as model, ExitStack() as stack:
        write_config(tmp_path, model.base_url)
        proc = subprocess.Popen(
            [HARNESS, "worker", "--live-steps"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            with serving(tmp_path, "--no-execute", env=env) as (url, _):
                client = stack.enter_context(
                    httpx.Client(base_url=url, headers=bearer("operate"), timeout=30)
                )
                made = client.post("/api/runs", json={"task": "list", "agent": "lister"})
                run_id = made.json()["run_id"]
                model_script.follow(client, run_id)
                run = wait_state(client, run_id, "COMPLETED")
                assert run["result"] == "seen live: True"
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        assert "worker stopped" in out, err


def test_approve_over_http_and_a_clean_stop_with_streams_open(tmp_path: Path) -> None:
    replies = [
        FakeReply.tool_call("write_file", {"path": "out.txt", "content": "hello"}),
        FakeReply.text("written"),
        FakeReply.tool_call("write_file", {"path": "never.txt", "content": "no"}),
    ]
    with FakeOpenAIServer(replies) as model, ExitStack() as stack:
        write_config(tmp_path, model.base_url)
        with serving(tmp_path) as (url, proc):
            client = stack.enter_context(
                httpx.Client(base_url=url, headers=bearer("operate"), timeout=30)
            )
            run_id = client.post("/api/runs", json={"task": "write", "agent": "writer"}).json()[
                "run_id"
            ]
            wait_state(client, run_id, "WAITING_TOOL")
            asked = client.get("/api/approvals").json()["approvals"]
            assert [a["tool"] for a in asked] == ["write_file"]
            decided = client.post(
                f"/api/runs/{run_id}/approvals/{asked[0]['call_id']}", json={"decision": "approve"}
            )
            assert decided.status_code == 200, decided.text
            run = wait_state(client, run_id, "COMPLETED")
            assert run["result"] == "written"
            assert (tmp_path / "ws" / "out.txt").read_text() == "hello"
            second = client.post("/api/runs", json={"task": "again", "agent": "writer"}).json()[
                "run_id"
            ]
            wait_state(client, second, "WAITING_TOOL")
            with (
                client.stream("GET", f"/api/runs/{second}/events") as one,
                client.stream("GET", "/api/events") as every,
            ):
                lines = one.iter_lines()
                next(lines)
                started = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                rest = list(lines)  # ends when the server stops, not when the run does
                list(every.iter_lines())
                assert time.monotonic() - started < 10
            assert "end" not in "".join(rest)
            assert proc.wait(timeout=20) == 0


def test_the_log_has_access_lines_and_no_secret_or_tool_result(tmp_path: Path) -> None:
    # The model's address carries a password (a proxy's, say): the HTTP client of the model
    # would log each request's URL at INFO. A tool result holds a marker past 200 characters.
    replies = [FakeReply.tool_call("read_file", {"path": "big.txt"}), FakeReply.text("read")]
    with FakeOpenAIServer(replies) as model, ExitStack() as stack:
        secret_url = model.base_url.replace("http://", "http://proxy:pr0xy-s3cret@")
        write_config(tmp_path, secret_url, READER)
        (tmp_path / "ws" / "big.txt").write_text("x" * 300 + "RESULT-MARKER")
        log = tmp_path / "serve.log"
        with serving(tmp_path, log=log) as (url, _):
            client = stack.enter_context(
                httpx.Client(base_url=url, headers=bearer("operate"), timeout=30)
            )
            made = client.post("/api/runs", json={"task": "read", "agent": "reader"})
            run = wait_state(client, made.json()["run_id"], "COMPLETED")
            assert run["result"] == "read"
            assert len(model.requests) == 2  # the model was called through that address
            messages = client.get(f"/api/runs/{run['run_id']}/messages")
            assert "RESULT-MARKER" in messages.text  # served, never logged
            assert httpx.post(f"{url}/login", data={"token": TOKENS["read"]}).status_code == 303
            wrong = {"Authorization": "Bearer wrong-guess-789"}
            assert httpx.get(f"{url}/api/runs", headers=wrong).status_code == 401
        text = log.read_text()
    assert "POST /api/runs 201" in text
    assert "by=operate-user" in text
    for secret in ("pr0xy-s3cret", "RESULT-MARKER", "x" * 100, "wrong-guess-789", *TOKENS.values()):
        assert secret not in text, secret


def cli(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, *args], env=env or env_for(home), capture_output=True, text=True, timeout=60
    )


def test_refuses_to_listen_beyond_the_loopback_without_tokens(tmp_path: Path) -> None:
    done = cli(tmp_path, "serve", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0, beyond the loopback, with no tokens" in done.stderr
    assert "harness serve token new" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_port_in_use_and_bad_flags_are_clear_errors(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        done = cli(tmp_path, "serve", "--port", str(port))
    finally:
        taken.close()
    assert done.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert "Traceback" not in done.stderr
    for args, words in (
        (("--port", "http"), "Invalid value for '--port'"),
        (("--port", "70000"), "Invalid value for '--port'"),
        (("--concurrency", "0"), "Invalid value for '--concurrency'"),
        (("--hots", "x"), "No such option"),
    ):
        wrong = cli(tmp_path, "serve", *args)
        assert wrong.returncode == 2, args
        assert words in wrong.stderr, (args, wrong.stderr)


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ('[server.tokens.bob]\ntoken = "hunter2"\nrole = "read"', "tokens are kept as hashes"),
        ('[server.tokens.bob]\nsha256 = "abc"\nrole = "read"', "not a SHA-256 hex digest"),
        (f'[server.tokens.bob]\nsha256 = "{"a" * 64}"\nrole = "root"', "server.tokens.bob.role"),
        (f'[server.tokens.bob]\nsha256 = "{"a" * 64}"', "server.tokens.bob.role"),
        ('[server]\ncors_origins = ["*"]', "is not an origin"),
        ("[server]\nmax_body_bytes = 10", "server.max_body_bytes"),
        ("[server]\nmax_streams = 0", "server.max_streams"),
        ('[server]\nmax_streams_per_token = "many"', "server.max_streams_per_token"),
    ],
)
def test_bad_server_tables_are_clear_errors(tmp_path: Path, table: str, words: str) -> None:
    (tmp_path / "harness.toml").write_text(table + "\n")
    done = cli(tmp_path, "serve", "--port", "0")
    assert done.returncode == 2
    assert words in done.stderr, done.stderr
    assert "harness.toml" in done.stderr
    assert "Traceback" not in done.stderr


def test_without_the_server_extra_it_says_how_to_install_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    (missing / "fastapi").mkdir(parents=True)
    (missing / "fastapi" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'fastapi'\", name='fastapi')\n"
    )
    env = env_for(tmp_path, PYTHONPATH=str(missing))
    done = cli(tmp_path, "serve", env=env)
    assert done.returncode == 2
    assert "pip install 'harness[server]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_new_token_works_with_its_role_and_a_made_token_without_any(tmp_path: Path) -> None:
    made = cli(tmp_path, "serve", "token", "new", "--role", "operate", "--name", "bob")
    assert made.returncode == 0, made.stderr
    token = made.stdout.splitlines()[0].rsplit(" ", 1)[1]
    table = made.stdout.split("add to harness.toml:\n", 1)[1]
    assert token not in table
    assert cli(tmp_path, "serve", "token", "new", "--role", "root").returncode == 2
    with serving(tmp_path) as (url, proc):
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("no tokens configured: this process's admin token is ")
        own = line.rsplit(" ", 1)[1].strip()
        me = httpx.get(f"{url}/api/me", headers={"Authorization": f"Bearer {own}"})
        assert me.json()["role"] == "admin"
    (tmp_path / "harness.toml").write_text(table)
    with serving(tmp_path) as (url, _):
        me = httpx.get(f"{url}/api/me", headers={"Authorization": f"Bearer {token}"})
        assert me.json() == {"role": "operate", "name": "bob", "csrf": None}
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
        assert httpx.get(f"{url}/readyz").json() == {"status": "ready"}
        assert httpx.get(f"{url}/api/runs").status_code == 401


def test_event_streams_are_capped_per_token_and_in_all(tmp_path: Path) -> None:
    write_config(tmp_path, "http://127.0.0.1:9/v1")
    text = (tmp_path / "harness.toml").read_text()
    limits = "[server]\nmax_streams = 3\nmax_streams_per_token = 2\n"
    (tmp_path / "harness.toml").write_text(text.replace("[server]\n", limits, 1))
    with serving(tmp_path) as (url, _), ExitStack() as stack:
        clients = {
            role: stack.enter_context(httpx.Client(base_url=url, headers=bearer(role), timeout=30))
            for role in ("read", "operate", "admin")
        }

        def open_stream(role: str) -> httpx.Response:
            response = stack.enter_context(clients[role].stream("GET", "/api/events"))
            assert response.status_code == 200, response.read()
            return response

        first = open_stream("read")
        open_stream("read")
        refused = clients["read"].get("/api/events")
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "5"
        assert "token 'read-user' holds 2 event streams open" in refused.json()["detail"]
        assert "max_streams_per_token" in refused.json()["detail"]
        open_stream("operate")  # another token still gets one: the third of three
        full = clients["admin"].get("/api/events")
        assert full.status_code == 503
        assert "max_streams" in full.json()["detail"]
        assert clients["read"].get("/api/runs").status_code == 200  # other requests: served
        first.close()  # a stream whose client left gives its place back (at its next write)
        deadline = time.monotonic() + 10
        while True:
            with clients["read"].stream("GET", "/api/events") as again:
                if again.status_code == 200:
                    break
                assert again.status_code == 503, again.read()  # all three still counted
            assert time.monotonic() < deadline, "the closed stream's place never came back"
            time.sleep(0.1)
