"""The API in-process (ASGI): runs, steering, approvals, errors, listing, reports."""

import asyncio
import json

from server_support import Api, bearer


async def test_submit_then_read_a_run_its_messages_events_audit_and_trace(api: Api) -> None:
    run_id = await api.submit("quick", "count the words")
    run = await api.state(run_id, "COMPLETED")
    assert run["result"] == "3 words"
    assert run["agent"] == "quick"
    assert run["step"] == 2
    assert run["usage"]["tool_calls"] == 1
    assert run["termination"] == "final_answer"
    messages = (await api.get(f"/api/runs/{run_id}/messages")).json()["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[2]["tool_calls"][0]["name"] == "count"
    assert messages[3]["content"] == "3"
    audit = (await api.get(f"/api/runs/{run_id}/audit")).json()["audit"]
    assert [a["tool"] for a in audit] == ["count"]
    spans = (await api.get(f"/api/runs/{run_id}/trace")).json()["spans"]
    assert spans[0]["parent_id"] is None
    ids = {s["span_id"] for s in spans}
    assert all(s["parent_id"] in ids for s in spans[1:])
    assert any(s["name"].startswith("execute_tool") for s in spans)
    stream = await api.client.get(f"/api/runs/{run_id}/events", headers=bearer("read"))
    frames = [f for f in stream.text.split("\n\n") if f]
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert frames[-1] == "event: end\ndata: {}"
    first = dict(line.split(": ", 1) for line in frames[0].splitlines())
    assert first["id"] == "1"
    assert first["event"] == "run_submitted"
    assert json.loads(first["data"])["run_id"] == run_id
    last = dict(line.split(": ", 1) for line in frames[-2].splitlines())
    assert last["event"] == "run_finished"
    assert int(last["id"]) == run["last_seq"]


async def test_last_event_id_resumes_after_that_seq(api: Api) -> None:
    run_id = await api.submit("quick")
    run = await api.state(run_id, "COMPLETED")
    headers = {**bearer("read"), "Last-Event-ID": "3"}
    resumed = await api.client.get(f"/api/runs/{run_id}/events", headers=headers)
    ids = [int(line[4:]) for line in resumed.text.splitlines() if line.startswith("id: ")]
    assert ids == list(range(4, run["last_seq"] + 1))
    by_query = await api.get(f"/api/runs/{run_id}/events", after=run["last_seq"] - 1)
    assert [line for line in by_query.text.splitlines() if line.startswith("id: ")] == [
        f"id: {run['last_seq']}"
    ]
    for wrong in (b"x", b"-1", b"\xb2", str(2**53 + 1).encode(), b"9" * 30):
        bad = await api.client.get(
            f"/api/runs/{run_id}/events", headers={**bearer("read"), "Last-Event-ID": wrong}
        )
        assert bad.status_code == 422, wrong  # not a stream that ends at once without `end`
        assert "Last-Event-ID" in bad.json()["detail"]
    farthest = await api.client.get(
        f"/api/runs/{run_id}/events", headers={**bearer("read"), "Last-Event-ID": str(2**53)}
    )
    assert farthest.text == "event: end\ndata: {}\n\n"


async def test_unknown_ids_are_404_problems(api: Api) -> None:
    for path in (
        "/api/runs/run_nope",
        "/api/runs/run_nope/messages",
        "/api/runs/run_nope/events",
        "/api/runs/run_nope/trace",
        "/api/runs/run_nope/audit",
    ):
        found = await api.get(path)
        assert found.status_code == 404, path
        assert found.headers["content-type"] == "application/problem+json"
        problem = found.json()
        assert problem["status"] == 404
        assert problem["title"] == "Not Found"
        assert "no run run_nope" in problem["detail"]
    assert (await api.post("/api/runs/run_nope/pause")).status_code == 404


async def test_pause_resume_cancel_and_409_on_an_invalid_transition(api: Api) -> None:
    run_id = await api.submit("gated", "count slowly")
    await api.state(run_id, "RUNNING")
    await asyncio.wait_for(api.gate.asked.wait(), 30)  # the model call waits for the gate
    paused = await api.post(f"/api/runs/{run_id}/pause")
    assert paused.status_code == 202
    await asyncio.sleep(0.5)  # the run's control reader takes the request (every 0.2 s)
    api.gate.go()  # the step ends: the run pauses at its boundary
    await api.state(run_id, "PAUSED")
    again = await api.post(f"/api/runs/{run_id}/pause")
    assert again.status_code == 409
    assert again.json()["detail"] == f"cannot pause run {run_id}: it is PAUSED"
    resumed = await api.post(f"/api/runs/{run_id}/resume")
    assert resumed.json()["run_id"] == run_id
    await api.state(run_id, "RUNNING", "PENDING")
    cancelled = await api.post(f"/api/runs/{run_id}/cancel", reason="enough")
    assert cancelled.status_code == 202  # the model call waiting at the gate is interrupted
    run = await api.state(run_id, "CANCELLED")
    assert run["termination"] == "cancelled"
    events = (await api.get(f"/api/runs/{run_id}/events")).text
    assert "run_paused" in events
    assert '"by":"token:otto"' in events.replace(" ", "")
    late = await api.post(f"/api/runs/{run_id}/cancel")
    assert late.status_code == 409
    assert late.json()["detail"] == f"cannot cancel run {run_id}: it is CANCELLED"


async def test_approve_a_waiting_call_and_the_run_finishes(api: Api) -> None:
    run_id = await api.submit("deployer", "ship it")
    await api.state(run_id, "WAITING_TOOL")
    waiting = (await api.get("/api/approvals")).json()["approvals"]
    assert len(waiting) == 1
    asked = waiting[0]
    assert asked["run_id"] == run_id
    assert asked["tool"] == "deploy"
    assert "prod" in asked["arguments"]
    assert asked["requested_at"] > 0
    path = f"/api/runs/{run_id}/approvals/{asked['call_id']}"
    assert (await api.post(path, decision="maybe")).status_code == 422
    approved = await api.post(path, decision="approve")
    assert approved.status_code == 200, approved.text
    run = await api.state(run_id, "COMPLETED")
    assert run["result"] == "shipped"
    twice = await api.post(path, decision="deny")
    assert twice.status_code == 409
    assert "already decided: approved by token:otto" in twice.json()["detail"]
    assert (await api.get("/api/approvals")).json()["approvals"] == []


async def test_deny_tells_the_model(api: Api) -> None:
    run_id = await api.submit("deployer", "ship it")
    await api.state(run_id, "WAITING_TOOL")
    call_id = (await api.get("/api/approvals")).json()["approvals"][0]["call_id"]
    denied = await api.post(
        f"/api/runs/{run_id}/approvals/{call_id}", decision="deny", reason="freeze"
    )
    assert denied.status_code == 200
    await api.state(run_id, "COMPLETED")
    messages = (await api.get(f"/api/runs/{run_id}/messages")).json()["messages"]
    assert "freeze" in messages[3]["content"]
    nothing = await api.post(f"/api/runs/{run_id}/approvals/call_other", decision="approve")
    assert nothing.status_code == 409


async def test_listing_filters_and_cursor_pages(api: Api) -> None:
    made = [
        await api.submit("quick", f"task {i}", task_type="triage" if i % 2 else None)
        for i in range(7)
    ]
    for run_id in made:
        await api.state(run_id, "COMPLETED")
    waiting = await api.submit("deployer")
    await api.state(waiting, "WAITING_TOOL")
    seen: list[str] = []
    cursor = None
    while True:
        page = (
            await api.get("/api/runs", limit=3, **({"cursor": cursor} if cursor else {}))
        ).json()
        seen += [r["run_id"] for r in page["runs"]]
        assert len(page["runs"]) <= 3
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [waiting, *reversed(made)]
    triage = (await api.get("/api/runs", task_type="triage")).json()["runs"]
    assert sorted(r["run_id"] for r in triage) == sorted(made[1::2])
    states = (await api.get("/api/runs", state="waiting_tool,paused")).json()["runs"]
    assert [r["run_id"] for r in states] == [waiting]
    by_agent = (await api.get("/api/runs", agent="deployer", state="COMPLETED")).json()["runs"]
    assert by_agent == []
    for bad in (
        {"state": "sleeping"},
        {"limit": 0},
        {"limit": 501},
        {"cursor": "!!"},
        {"task_type": "Bad Type"},
    ):
        refused = await api.get("/api/runs", **bad)
        assert refused.status_code == 422, bad
        assert refused.headers["content-type"] == "application/problem+json"


async def test_submit_refuses_bad_bodies_with_422(api: Api) -> None:
    for body in (
        {},
        {"task": ""},
        {"task": "x", "agent": "nobody"},
        {"task": "x", "tools": ["rm"]},
        {"task": "x", "agent": "quick", "tools": ["bash"]},
        {"task": "x", "extra": 1},
        {"task": "x", "model": "no-such-profile"},
        {"task": "x", "max_steps": 0},
    ):
        done = await api.client.post("/api/runs", json=body, headers=bearer("operate"))
        assert done.status_code == 422, (body, done.text)
        assert done.json()["status"] == 422
    garbled = await api.client.post(
        "/api/runs",
        content=b"{not json",
        headers={**bearer("operate"), "content-type": "application/json"},
    )
    assert garbled.status_code == 422
    assert garbled.json()["detail"] == (
        "body: not valid JSON at character 1 (Expecting property name enclosed in double quotes)"
    )


async def test_a_body_over_the_limit_is_413(api: Api) -> None:
    big = {"task": "x" * (1 << 20)}
    done = await api.client.post("/api/runs", json=big, headers=bearer("operate"))
    assert done.status_code == 413
    assert done.headers["content-type"] == "application/problem+json"

    async def chunks():  # no Content-Length: counted as it comes
        for _ in range(20):
            yield b"x" * 65536

    streamed = await api.client.post(
        "/api/runs",
        content=chunks(),
        headers={**bearer("operate"), "content-type": "application/json"},
    )
    assert streamed.status_code == 413
    small = await api.client.post(
        "/api/runs",
        content=b'{"task": "fits", "agent": "quick"}',
        headers={**bearer("operate"), "content-type": "application/json"},
    )
    assert small.status_code == 201
    assert (await api.client.get("/api/runs", headers=bearer("read"))).json()["runs"][0][
        "task"
    ] == "fits"


async def test_reports_cost_stats_series_experiments_metrics_health(api: Api) -> None:
    run_id = await api.submit("quick")
    await api.state(run_id, "COMPLETED")
    cost = (await api.get("/api/cost", by="model")).json()
    assert cost["by"] == "model"
    assert cost["total"]["runs"] == 1
    assert cost["rows"][0]["runs"] == 1
    assert {"key", "input_tokens", "output_tokens", "cost_usd"} <= cost["rows"][0].keys()
    by_tool = (await api.get("/api/cost", by="tool")).json()
    assert [r["key"] for r in by_tool["rows"]] == ["count"]
    series = (await api.get("/api/cost/series", by="model", bucket="day")).json()
    assert series["series"][0]["points"][0]["tokens"] >= 0
    hourly = (await api.get("/api/cost/series", bucket="hour", since="3h")).json()
    assert len(hourly["series"]) == 1
    stats = (await api.get("/api/stats")).json()
    assert stats["window"]
    assert (await api.get("/api/experiments")).json() == []
    assert (await api.get("/api/cost", by="planet")).status_code == 422
    assert (await api.get("/api/cost", since="yesterday-ish")).status_code == 422
    metrics = await api.get("/metrics")
    assert "harness_runs" in metrics.text
    assert (await api.client.get("/healthz")).json() == {"status": "ok"}
    assert (await api.client.get("/readyz")).json() == {"status": "ready"}
    me = (await api.get("/api/me", role="operate")).json()
    assert me == {"role": "operate", "name": "otto", "csrf": None}


async def test_openapi_lists_the_api(api: Api) -> None:
    schema = (await api.get("/openapi.json")).json()
    paths = schema["paths"]
    for path in (
        "/api/runs",
        "/api/runs/{run_id}",
        "/api/runs/{run_id}/events",
        "/api/runs/{run_id}/approvals/{call_id}",
        "/api/cost",
        "/api/stats",
    ):
        assert path in paths
    assert (await api.client.get("/openapi.json")).status_code == 401


async def test_readyz_is_503_while_the_store_does_not_answer(tmp_path) -> None:
    import httpx

    from harness import Harness
    from harness.runtime import Settings
    from harness.server.app import create_app

    closed = Harness(Settings(home=tmp_path), store=str(tmp_path / "never-opened.db"))
    app = create_app(closed, env={})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        ready = await client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["detail"] == "the store does not answer"
        assert (await client.get("/healthz")).status_code == 200


async def test_send_a_message_to_a_running_run_once_even_when_the_request_is_retried(
    api: Api,
) -> None:
    run_id = await api.submit("gated", "count slowly")
    await api.state(run_id, "RUNNING")
    await asyncio.wait_for(api.gate.asked.wait(), 30)  # the first model call waits
    path = f"/api/runs/{run_id}/messages"
    headers = {**bearer("operate"), "Idempotency-Key": "retry-1"}
    sent = await api.client.post(path, json={"content": "use the blue one"}, headers=headers)
    assert sent.status_code == 201, sent.text
    again = await api.client.post(path, json={"content": "use the blue one"}, headers=headers)
    assert again.status_code == 201
    assert again.json() == sent.json()
    assert sent.json()["run_id"] == run_id
    named = await api.post(path, content="and hurry", sender="pager")
    assert named.json()["message_id"] != sent.json()["message_id"]
    await asyncio.sleep(0.5)  # the run's control reader takes the mail (every 0.2 s)
    api.gate.go(20)
    await api.state(run_id, "COMPLETED")
    users = await user_messages(api, run_id)
    assert users.count("[message from otto]: use the blue one") == 1
    assert users.count("[message from pager]: and hurry") == 1
    late = await api.post(path, content="too late")
    assert late.status_code == 409
    assert late.json()["detail"].startswith(f"cannot send to run {run_id}")


async def test_a_message_that_cannot_be_sent_is_a_clear_problem(api: Api) -> None:
    run_id = await api.submit("gated", "count slowly")
    await api.state(run_id, "RUNNING")
    path = f"/api/runs/{run_id}/messages"
    reader = await api.post(path, role="read", content="hello")
    assert reader.status_code == 403
    assert (await api.post("/api/runs/run_nope/messages", content="hi")).status_code == 404
    for body, why in (
        ({"content": ""}, "content"),
        ({"content": "x" * 20_001}, "content"),
        ({"content": "hi", "extra": 1}, "extra"),
        ({"content": "hi", "sender": ""}, "sender"),
    ):
        bad = await api.client.post(path, json=body, headers=bearer("operate"))
        assert bad.status_code == 422, body
        assert why in bad.json()["detail"], bad.json()
    blank = await api.post(path, content="   ")
    assert blank.status_code == 422
    assert blank.json()["detail"] == f"cannot send to run {run_id}: the message is empty"
    nameless = await api.post(path, content="hi", sender="  ")
    assert nameless.json()["detail"] == f"cannot send to run {run_id}: the sender has no name"
    half = await api.client.post(
        path,
        content=b'{"content": "a lone \\ud800 half"}',
        headers={**bearer("operate"), "content-type": "application/json"},
    )
    assert half.status_code == 422  # broken Unicode never reaches the store
    assert half.json()["detail"].startswith("content: ")
    long_key = {**bearer("operate"), "Idempotency-Key": "k" * 201}
    refused = await api.client.post(path, json={"content": "hi"}, headers=long_key)
    assert refused.status_code == 422
    assert "idempotency-key" in refused.json()["detail"].lower()
    api.gate.go(20)
    await api.state(run_id, "COMPLETED")
    users = await user_messages(api, run_id)
    assert users == ["count slowly"]  # nothing refused reached the run


async def user_messages(api: Api, run_id: str) -> list[str]:
    """The contents of the run's `user` messages, in order."""
    messages = (await api.get(f"/api/runs/{run_id}/messages")).json()["messages"]
    return [m["content"] for m in messages if m["role"] == "user"]
