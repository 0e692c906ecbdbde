"""The dashboard in Debian's chromium against a real `harness serve`: log in, watch a run
live, approve a waiting call, cancel, read the charts, hostile data, a phone's width."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest
from dashboard_support import PHONE, READ_TOKEN, Page, Server, wait_until

from harness.testing import FakeReply

OpenPage = Callable[..., Page]
HOSTILE = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'


def text_of(page: Page, selector: str) -> str:
    return page.page.locator(selector).first.inner_text()


def budget_left(page: Page) -> float:
    """The run page's "Budget left" in dollars ($0.01 of [agents.support], shown to 4 places)."""
    text = page.page.locator("[data-fact='budget-left']").inner_text()
    assert text.startswith("$"), text
    return float(text[1:])


def test_login_takes_a_token_and_refuses_a_wrong_one(open_page: OpenPage, server: Server) -> None:
    tab = open_page()
    tab.goto("/")
    tab.page.wait_for_url("**/login**")
    tab.page.get_by_label("Token").fill("not-a-token")
    tab.page.get_by_role("button", name="Log in").click()
    error = tab.page.locator("#login-error")
    error.wait_for(state="visible")
    assert "not accepted" in error.inner_text()
    tab.shot("login-refused")
    tab.login()
    cookies = {c["name"]: c for c in tab.page.context.cookies()}
    session = cookies["harness_session"]
    assert session["httpOnly"] is True
    assert session["sameSite"] == "Strict"
    assert "hs_admin" not in session["value"]  # an opaque session id, never the token
    assert tab.page.locator("#who").inner_text() == "role: admin"
    tab.page.get_by_role("button", name="Log out").click()
    tab.page.wait_for_url("**/login**")
    tab.goto("/overview")
    tab.page.wait_for_url("**/login**")


def test_the_timeline_grows_while_the_run_goes_on(open_page: OpenPage, server: Server) -> None:
    # A step shows as it is committed: the model's reply with its calls before they run, and
    # (harness serve's live steps) the next model call while the model thinks, with the safe
    # tool's result before it. The second model call waits for the test, so the page is seen
    # mid-run, then at its end; the budget counts down from the agent's limits.
    second = server.brain.gate()

    def script(step: int) -> FakeReply:
        if step == 1:
            return FakeReply.tool_call("lookup_order", {"order_id": "A-17"}, id="call_look")
        second.wait(60)
        return FakeReply.text("Order A-17 shipped on Monday.", input_tokens=40, output_tokens=9)

    server.brain.on("[live]", script)
    tab = open_page()
    tab.login()
    run_id = server.submit("[live] where is order A-17?", task_type="triage")
    row = tab.page.locator(f"tr[data-run-id='{run_id}']")
    row.wait_for()  # the list shows the new run without a reload
    row.locator("a").click()
    tab.page.wait_for_url(f"**/runs/{run_id}")
    page = tab.page
    call = page.locator("li.call[data-call-id='call_look']")
    call.wait_for()
    stats = page.locator("li.model[data-step='1'] .model-stats").inner_text()
    assert stats.startswith("10 in · 5 out")
    call.locator("details.args summary").click()
    assert '"order_id": "A-17"' in call.locator(".args pre").inner_text()
    thinking = page.locator("li.model[data-step='2'][data-state='calling']")
    thinking.wait_for()  # the model is called and has not answered: the test holds it
    assert "waiting for the model" in thinking.inner_text()
    assert call.locator(".call-status").get_attribute("data-status") == "ok"
    assert "shipped on Monday" in call.locator(".summary").inner_text()
    assert "Not yet" in text_of(tab, "#answer")
    assert page.locator(".note-finished").count() == 0
    page.locator("[data-fact='step']").filter(has_text="2 of 6").wait_for()
    assert page.locator("[data-fact='steps-left']").inner_text() == "4"
    run = server.run(run_id)
    assert run["limits"]["max_tokens"] == 10000  # [agents.support] limits in harness.toml
    assert page.locator("[data-fact='tokens-left']").inner_text() == "9,985"  # 10 in, 5 out
    assert page.locator("[data-fact='tool-calls-left']").inner_text() == "4"
    assert budget_left(tab) == pytest.approx(0.01 - run["usage"]["cost_usd"], abs=5e-5)
    assert re.fullmatch(r"59m \d\ds", page.locator("[data-fact='time-left']").inner_text())
    page.locator(".run-meta [data-state='RUNNING']").wait_for()
    tab.shot("run-live")

    second.set()
    page.locator(".note-finished").wait_for()
    assert call.locator(".summary").inner_text() == (
        "order A-17: 3 items, shipped on Monday, total 120.50 EUR"
    )
    assert "40 in · 9 out" in page.locator("li.model[data-step='2'] .model-stats").inner_text()
    assert page.locator("li.model[data-step='2']").get_attribute("data-state") == "responded"
    assert page.locator("pre.answer").inner_text() == "Order A-17 shipped on Monday."
    page.locator(".run-meta [data-state='COMPLETED']").wait_for()
    page.locator("[data-fact='tokens']").filter(has_text="50 in · 14 out").wait_for()
    assert page.locator("[data-fact='steps-left']").inner_text() == "4"
    assert page.locator("[data-fact='tokens-left']").inner_text() == "9,936"
    cost = server.run(run_id)["usage"]["cost_usd"]
    assert cost > 0
    assert budget_left(tab) == pytest.approx(0.01 - cost, abs=5e-5)
    page.locator("ol.messages li.msg-assistant").nth(1).wait_for()
    roles = page.locator("ol.messages li .badge").all_inner_texts()
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    page.locator(".waterfall li.span").first.wait_for()
    spans = server.get(f"/api/runs/{run_id}/trace")["spans"]
    assert page.locator(".waterfall li.span").count() == len(spans)
    tab.shot("run-finished")


def test_the_timeline_shows_the_tool_being_called(open_page: OpenPage, server: Server) -> None:
    # The warehouse (a safe tool) answers only when the test writes its file: meanwhile the
    # call shows as running, with its arguments, and nothing after it.
    def script(step: int) -> FakeReply:
        if step == 1:
            return FakeReply.tool_call("check_stock", {"item": "lamp"}, id="call_stock")
        return FakeReply.text("4 lamps in stock.")

    server.brain.on("[stock]", script)
    tab = open_page()
    tab.login()
    run_id = server.submit("[stock] any lamps left?")
    tab.goto(f"/runs/{run_id}")
    call = tab.page.locator("li.call[data-call-id='call_stock']")
    call.locator(".call-status[data-status='running']").wait_for()
    assert "check_stock" in call.inner_text()
    assert "lamp" in call.locator("details.args summary").inner_text()
    assert tab.page.locator("li.model[data-step='2']").count() == 0
    tab.shot("run-tool-running")
    (server.home / "stock-lamp").write_text("")
    call.locator(".call-status[data-status='ok']").wait_for()
    tab.page.locator(".run-meta [data-state='COMPLETED']").wait_for()
    assert call.locator(".summary").inner_text() == "lamp: 4 in stock"
    assert tab.page.locator("[data-fact='tool-calls-left']").inner_text() == "4"


def test_approve_a_waiting_call_and_the_run_finishes(open_page: OpenPage, server: Server) -> None:
    def script(step: int) -> FakeReply:
        if step == 1:
            return FakeReply.tool_call(
                "refund", {"order_id": "B-2", "amount": 12.5}, id="call_refund"
            )
        return FakeReply.text("Refunded 12.50 on B-2.")

    server.brain.on("[approve]", script)
    run_id = server.submit("[approve] refund order B-2")
    server.wait_state(run_id, "WAITING_TOOL")
    tab = open_page()
    tab.login()
    waiting = tab.page.locator(".waiting li[data-call-id='call_refund']")
    assert "refund" in waiting.inner_text()  # the list names the calls that wait
    waiting.get_by_role("link").click()
    tab.page.wait_for_url(f"**/runs/{run_id}")
    call = tab.page.locator("li.call[data-call-id='call_refund'][data-waiting]")
    call.wait_for()
    assert "waiting for approval" in call.inner_text()
    tab.shot("run-waiting-approval")
    call.get_by_label("Reason").fill("customer is right")
    call.get_by_label("Reason").press("Tab")  # by keyboard: the next stop is Approve
    assert tab.page.evaluate("document.activeElement.textContent") == "Approve"
    tab.page.keyboard.press("Enter")
    tab.page.locator(
        "li.call[data-call-id='call_refund'] .call-status[data-status='ok']"
    ).wait_for()
    tab.page.locator(".run-meta [data-state='COMPLETED']").wait_for()
    assert tab.page.locator("pre.answer").inner_text() == "Refunded 12.50 on B-2."
    assert "Approved by" in tab.page.locator("li.call[data-call-id='call_refund']").inner_text()
    assert all(a["run_id"] != run_id for a in server.get("/api/approvals")["approvals"])
    tab.page.get_by_role("link", name="Runs").first.click()
    tab.page.locator(f"tr[data-run-id='{run_id}'] [data-state='COMPLETED']").wait_for()
    assert tab.page.locator(".waiting li[data-call-id='call_refund']").count() == 0


def test_cancel_a_running_run(open_page: OpenPage, server: Server) -> None:
    never = server.brain.gate()

    def script(step: int) -> FakeReply:
        never.wait(120)
        return FakeReply.text("too late")

    server.brain.on("[cancel]", script)
    run_id = server.submit("[cancel] think for a long time")
    server.wait_state(run_id, "RUNNING")
    tab = open_page()
    tab.login()
    tab.goto(f"/runs/{run_id}")
    tab.page.locator(".run-meta [data-state='RUNNING']").wait_for()
    cancel = tab.page.get_by_role("button", name="Cancel")
    cancel.wait_for()
    assert cancel.is_enabled()
    assert tab.page.get_by_role("button", name="Resume").is_disabled()
    with tab.page.expect_request(f"**/api/runs/{run_id}/cancel") as sent:
        cancel.click()
    csrf = tab.page.evaluate("fetch('/api/me').then(r => r.json()).then(me => me.csrf)")
    assert sent.value.headers["x-csrf-token"] == csrf  # the cookie alone would be refused
    tab.page.locator(".run-meta [data-state='CANCELLED']").wait_for()
    tab.page.locator(".note-cancelled").wait_for()
    assert server.run(run_id)["state"] == "CANCELLED"
    tab.page.get_by_role("button", name="Resume as new run").wait_for()
    assert tab.page.get_by_role("button", name="Cancel").is_disabled()


def test_pause_and_resume_from_the_run_page(open_page: OpenPage, server: Server) -> None:
    # The run goes on calling tools (a step every 0.3 s at least) until the pause, which
    # takes effect at the next step boundary after the runtime reads it.
    thinking = server.brain.gate()

    def script(step: int) -> FakeReply:
        if step == 1:
            return FakeReply.tool_call("lookup_order", {"order_id": "P-1"}, id="call_p")
        if step == 2:
            thinking.wait(60)
        if step < 6:
            call = FakeReply.tool_call(
                "lookup_order", {"order_id": f"P-{step}"}, id=f"call_p{step}"
            )
            return dataclasses.replace(call, delay_s=0.3)
        return FakeReply.text("paused and resumed")

    server.brain.on("[pause]", script)
    run_id = server.submit("[pause] look up two orders")
    tab = open_page()
    tab.login()
    tab.goto(f"/runs/{run_id}")
    page = tab.page
    page.locator("li.call[data-call-id='call_p']").wait_for()
    page.get_by_role("button", name="Pause").click()
    page.locator(".feedback").filter(has_text="pause requested").wait_for()
    thinking.set()
    page.locator(".run-meta [data-state='PAUSED']").wait_for()
    page.locator(".note-paused").wait_for()
    assert page.get_by_role("button", name="Pause").is_disabled()
    tab.shot("run-paused")
    page.get_by_role("button", name="Resume").click()
    page.locator(".run-meta [data-state='COMPLETED']").wait_for()
    assert page.locator("pre.answer").inner_text() == "paused and resumed"
    page.locator(".note-resumed").wait_for()
    assert server.run(run_id)["state"] == "COMPLETED"


def test_send_a_message_to_a_running_run(open_page: OpenPage, server: Server) -> None:
    thinking = server.brain.gate()

    def script(step: int) -> FakeReply:
        if step == 2:
            thinking.wait(60)
        if step < 5:
            call = FakeReply.tool_call(
                "lookup_order", {"order_id": f"S-{step}"}, id=f"call_s{step}"
            )
            return dataclasses.replace(call, delay_s=0.3)
        return FakeReply.text("heard you")

    server.brain.on("[steer]", script)
    run_id = server.submit("[steer] look up some orders")
    tab = open_page()
    tab.login()
    tab.goto(f"/runs/{run_id}")
    page = tab.page
    page.locator("li.call[data-call-id='call_s1']").wait_for()
    send = page.get_by_role("button", name="Send message")
    send.click()  # nothing written yet: nothing is sent
    page.locator(".feedback").filter(has_text="Write a message first").wait_for()
    page.get_by_label("Message to the run").fill("check order S-9 too <b>now</b>")
    send.click()
    page.locator(".feedback").filter(has_text="sent: the run reads it").wait_for()
    assert page.get_by_label("Message to the run").input_value() == ""
    thinking.set()
    page.locator(".run-meta [data-state='COMPLETED']").wait_for()
    assert page.get_by_role("button", name="Send message").count() == 0  # a run that ended
    users = [
        m["content"]
        for m in server.get(f"/api/runs/{run_id}/messages")["messages"]
        if m["role"] == "user"
    ]
    assert len(users) == 2
    assert users[1].startswith("[message from ")
    assert users[1].endswith("]: check order S-9 too <b>now</b>")


def test_deny_a_waiting_call_with_a_reason(open_page: OpenPage, server: Server) -> None:
    def script(step: int) -> FakeReply:
        if step == 1:
            arguments = {"order_id": "D-4", "amount": 999}
            return FakeReply.tool_call("refund", arguments, id="call_deny")
        return FakeReply.text("I will not refund D-4.")

    server.brain.on("[deny]", script)
    run_id = server.submit("[deny] refund D-4 in full")
    server.wait_state(run_id, "WAITING_TOOL")
    tab = open_page()
    tab.login()
    tab.goto(f"/runs/{run_id}")
    call = tab.page.locator("li.call[data-call-id='call_deny'][data-waiting]")
    call.get_by_label("Reason").fill("too much")
    call.get_by_role("button", name="Deny").click()
    tab.page.locator(".run-meta [data-state='COMPLETED']").wait_for()
    row = tab.page.locator("li.call[data-call-id='call_deny']")
    assert "Denied by" in row.inner_text()
    assert "too much" in row.inner_text()
    assert tab.page.locator("pre.answer").inner_text() == "I will not refund D-4."
    tool_messages = [
        m for m in server.get(f"/api/runs/{run_id}/messages")["messages"] if m["role"] == "tool"
    ]
    assert "too much" in tool_messages[0]["content"]


def test_a_read_only_token_sees_no_controls(open_page: OpenPage, server: Server) -> None:
    def script(step: int) -> FakeReply:
        if step == 1:
            return FakeReply.tool_call("refund", {"order_id": "C-3", "amount": 1}, id="call_ro")
        return FakeReply.text("done")

    server.brain.on("[readonly]", script)
    run_id = server.submit("[readonly] refund C-3")
    server.wait_state(run_id, "WAITING_TOOL")
    tab = open_page()
    tab.login(READ_TOKEN)
    tab.goto(f"/runs/{run_id}")
    call = tab.page.locator("li.call[data-call-id='call_ro'][data-waiting]")
    call.wait_for()
    assert "Waiting for an operator" in call.inner_text()
    assert tab.page.get_by_role("button", name="Approve").count() == 0
    assert tab.page.get_by_role("button", name="Cancel").count() == 0
    assert tab.page.get_by_role("button", name="Send message").count() == 0
    assert "Read-only" in text_of(tab, ".controls")
    server.call("POST", f"/api/runs/{run_id}/approvals/call_ro", {"decision": "deny"})
    server.wait_state(run_id, "COMPLETED", "FAILED")


def test_hostile_text_is_shown_never_run(open_page: OpenPage, server: Server) -> None:
    def script(step: int) -> FakeReply:
        if step == 1:
            return FakeReply.tool_call("lookup_order", {"order_id": HOSTILE}, id="call_x")
        return FakeReply.text(f"answer {HOSTILE}")

    server.brain.on("[hostile]", script)
    run_id = server.submit(f"[hostile] {HOSTILE}")
    server.wait_state(run_id, "COMPLETED")
    tab = open_page()
    tab.login()
    tab.page.locator(f"tr[data-run-id='{run_id}'] .task").wait_for()
    assert HOSTILE in tab.page.locator(f"tr[data-run-id='{run_id}'] .task").inner_text()
    tab.goto(f"/runs/{run_id}")
    tab.page.locator("pre.answer").wait_for()
    assert tab.page.locator("pre.answer").inner_text() == f"answer {HOSTILE}"
    assert HOSTILE in tab.page.locator("h1.run-task").inner_text()
    tab.page.locator("li.call[data-call-id='call_x'] details.args summary").click()
    assert HOSTILE.replace('"', '\\"') in tab.page.locator("li.call .args pre").inner_text()
    assert HOSTILE in tab.page.locator("li.call .summary").inner_text()
    tab.page.locator("ol.messages li.msg-tool").wait_for()
    assert tab.page.evaluate("window.__xss") is None
    assert tab.page.locator("main script, main img").count() == 0
    tab.shot("run-hostile")


def test_a_row_of_the_list_follows_its_run(open_page: OpenPage, server: Server) -> None:
    answer = server.brain.gate()

    def script(step: int) -> FakeReply:
        if step == 1:
            return FakeReply.tool_call("lookup_order", {"order_id": "R-9"}, id="call_row")
        answer.wait(60)
        return FakeReply.text("row done", input_tokens=200, output_tokens=20)

    server.brain.on("[row]", script)
    tab = open_page()
    tab.login()
    tab.page.evaluate("window.__loaded_once = true")
    run_id = server.submit("[row] watch me in the list")
    row = tab.page.locator(f"tr[data-run-id='{run_id}']")
    row.locator("[data-state='RUNNING']").wait_for()
    row.locator("[data-col='tokens']").filter(has_text="15").wait_for()  # step 1's reply
    answer.set()
    row.locator("[data-state='COMPLETED']").wait_for()
    record = server.run(run_id)
    assert record["usage"]["input_tokens"] + record["usage"]["output_tokens"] == 235
    row.locator("[data-col='tokens']").filter(has_text="235").wait_for()
    assert row.locator("[data-col='step']").inner_text().split(" /")[0] == "2"
    assert tab.page.evaluate("window.__loaded_once") is True  # no reload: the stream did it


def test_a_child_run_and_a_handoff_in_the_timeline(open_page: OpenPage, server: Server) -> None:
    # lead calls the agent tool researcher (a child run, held by the test), then hands the
    # run over to support, which answers. The child's answer is longer than a summary.
    finding = "E-5 was sent twice by mistake; " * 12
    child_may_answer = server.brain.gate()

    def lead(step: int) -> FakeReply:
        if step == 1:
            task = {"task": "[research] what happened to order E-5?"}
            return FakeReply.tool_call("researcher", task, id="call_child")
        if step == 2:
            reason = {"reason": "the customer wants a refund"}
            return FakeReply.tool_call("transfer_to_support", reason, id="call_handoff")
        return FakeReply.text("support here: refund on its way")

    def research(step: int) -> FakeReply:
        child_may_answer.wait(60)
        return FakeReply.text(finding)

    server.brain.on("[lead]", lead)
    server.brain.on("[research]", research)
    server.brain.on("[followup]", lambda step: FakeReply.text("checked"))
    run_id = server.submit("[lead] sort out E-5", agent="lead", task_type="escalation")
    parent = server.wait_state(run_id, "WAITING_TOOL")
    child_id = next(
        r["run_id"]
        for r in server.get("/api/runs?limit=50")["runs"]
        if r["parent_run_id"] == run_id
    )
    assert parent["detail"] == f"waiting for child run {child_id}"
    tab = open_page()
    tab.login()
    child_row = tab.page.locator(f"tr[data-run-id='{child_id}']")
    assert child_row.locator(".parent a").inner_text() == run_id  # the list names the parent
    parent_row = tab.page.locator(f"tr[data-run-id='{run_id}']")
    assert parent_row.locator(".detail").inner_text() == f"waiting for child run {child_id}"
    tab.goto(f"/runs/{run_id}")
    page = tab.page
    assert page.locator("[data-fact='detail']").inner_text() == parent["detail"]
    line = page.locator(
        f"li.call[data-call-id='call_child'] .child[data-child-run-id='{child_id}']"
    )
    line.wait_for()
    assert "agent researcher" in line.inner_text()
    tab.shot("run-child-waiting")
    line.get_by_role("link", name=child_id).click()  # to the child's own page
    page.wait_for_url(f"**/runs/{child_id}")
    page.locator(".run-meta").get_by_role("link", name=run_id).wait_for()
    child_may_answer.set()
    page.locator(".run-meta [data-state='COMPLETED']").wait_for()
    page.locator(".run-meta").get_by_role("link", name=run_id).click()
    page.wait_for_url(f"**/runs/{run_id}")
    page.locator(".run-meta [data-state='COMPLETED']").wait_for()
    page.locator(
        f"li.call .child[data-child-run-id='{child_id}'][data-state='COMPLETED']"
    ).wait_for()
    summary = page.locator("li.call[data-call-id='call_child'] .summary").inner_text()
    assert len(summary) == 200  # the tool call's 200-character summary, cut ...
    assert summary.endswith("…")
    full = server.get(f"/api/runs/{run_id}/messages")["messages"]
    assert any(m["content"] == finding.strip() for m in full)  # ... of the whole answer
    handoff = page.locator(".note-handoff")
    assert "Handed over from lead to support" in handoff.inner_text()
    assert "Continues as support" in page.locator(".note-started").nth(1).inner_text()
    assert page.locator("pre.answer").inner_text() == "support here: refund on its way"
    used = server.run(run_id)["children_usage"]
    tokens = used["input_tokens"] + used["output_tokens"]
    assert tokens > 0
    assert page.locator("[data-fact='children']").inner_text().startswith(f"{tokens} tokens · $")
    tab.shot("run-child-handoff")
    # Its end fired the trigger `followup` (harness.toml): that run's page says so.
    followup = wait_until(
        lambda: next(
            (r for r in server.get("/api/runs?limit=50")["runs"] if run_id in r["task"]), None
        ),
        "the run the trigger started",
    )
    tab.goto(f"/runs/{followup['run_id']}")
    fired = page.locator(".note-trigger")
    assert "Started by the trigger followup on run_finished" in fired.inner_text()
    fired.get_by_role("link", name=run_id).wait_for()


def test_runs_list_filters(open_page: OpenPage, server: Server) -> None:
    server.brain.on("[filter]", lambda step: FakeReply.text("filtered"))
    typed = server.submit("[filter] typed", task_type="triage")
    plain = server.submit("[filter] plain")
    server.wait_state(typed, "COMPLETED")
    server.wait_state(plain, "COMPLETED")
    tab = open_page()
    tab.login()
    tab.page.locator(f"tr[data-run-id='{plain}']").wait_for()
    record = server.run(typed)  # in the experiment triage-model: a variant of it
    row = tab.page.locator(f"tr[data-run-id='{typed}']")
    assert row.locator("td[data-label='Variant']").inner_text() == (
        f"triage-model:{record['variant']}"
    )
    assert row.locator("td[data-label='Agent']").inner_text() == "support"
    assert row.locator("td[data-label='Task type']").inner_text() == "triage"
    assert row.locator("[data-col='duration']").inner_text() != "–"
    tab.page.get_by_label("Task type").fill("triage")
    tab.page.get_by_role("button", name="Filter").click()
    tab.page.wait_for_url("**/?task_type=triage")
    tab.page.locator(f"tr[data-run-id='{plain}']").wait_for(state="detached")
    assert tab.page.locator(f"tr[data-run-id='{typed}']").count() == 1
    listed = server.get("/api/runs?task_type=triage&limit=50")["runs"]
    shown = tab.page.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.runId)")
    assert shown == [r["run_id"] for r in listed]
    tab.page.get_by_label("State").select_option("FAILED")
    tab.page.wait_for_url("**/?state=FAILED&task_type=triage")
    wait_until(lambda: tab.page.locator(f"tr[data-run-id='{typed}']").count() == 0, "the filter")


def same_t(shown: str, given: Any) -> bool:
    """A time bucket as the table shows it is the API's (a number or a date string)."""
    return float(shown) == given if isinstance(given, int | float) else shown == given


def chart_values(tab: Page, chart: str) -> dict[str, str]:
    rows = tab.page.locator(f"figure[data-chart='{chart}'] ul.bars li")
    return dict(
        rows.evaluate_all("items => items.map(li => [li.dataset.key, Number(li.dataset.value)])")
    )


def test_the_charts_show_what_the_api_returns(open_page: OpenPage, server: Server) -> None:
    server.brain.on("[chart]", lambda step: FakeReply.text("charted", input_tokens=100))
    for n in range(2):
        server.wait_state(server.submit(f"[chart] {n}", task_type="triage"), "COMPLETED")
    tab = open_page()
    tab.login()
    tab.goto("/overview")
    page = tab.page
    page.locator("figure[data-chart='terminations'] ul.bars li").first.wait_for()
    stats = server.get("/api/stats")
    assert chart_values(tab, "terminations") == {
        t["name"]: t["count"] for t in stats["terminations"]
    }
    assert chart_values(tab, "tool-success") == {
        t["tool"]: t["success_rate"] for t in stats["tools"]
    }
    context = page.locator("figure[data-chart='context-tokens'] tbody tr").evaluate_all(
        "rows => rows.map(r => [Number(r.dataset.x), Number(r.dataset.value)])"
    )
    assert context == [[c["step"], c["median_input_tokens"]] for c in stats["context_tokens"]]
    for by in ("model", "tool", "task_type"):
        series = server.get(f"/api/cost/series?by={by}&bucket=day")["series"]
        drawn = page.locator(f"figure[data-chart='cost-{by}'] tbody tr").evaluate_all(
            "rows => rows.map(r => [r.dataset.key, r.dataset.x, Number(r.dataset.value)])"
        )
        wanted = [
            [s["key"] if s["key"] not in (None, "") else "(none)", p["t"], p["cost_usd"] or 0]
            for s in series
            for p in sorted(s["points"], key=lambda p: p["t"])
        ]
        assert len(drawn) == len(wanted), by
        for (key, x, value), (want_key, t, want_value) in zip(drawn, wanted, strict=True):
            assert (key, value) == (want_key, want_value), by
            assert same_t(x, t), (by, x, t)
    model_costs = server.get("/api/cost?by=model")["rows"]
    assert model_costs, "the runs above cost something"
    cells = page.locator("table[data-table='cost-model'] tbody tr").evaluate_all(
        "rows => rows.map(r => [r.dataset.key, Number(r.lastChild.dataset.value)])"
    )
    assert cells == [[r["key"], r["cost_usd"]] for r in model_costs]
    assert any(value > 0 for _, value in cells)
    reports = server.get("/api/experiments")
    assert [r["experiment"] for r in reports] == ["triage-model"]
    page.locator("section.experiment[data-experiment='triage-model']").wait_for()
    shown = page.locator("section.experiment tbody tr").evaluate_all(
        "rows => rows.map(r => [r.dataset.variant, Number(r.children[1].textContent)])"
    )
    assert shown == [[v["variant"], v["runs"]] for v in reports[0]["variants"]]
    assert sum(runs for _, runs in shown) >= 2  # the runs above, each in one variant
    tab.shot("overview")


@pytest.mark.parametrize("path", ["/", "run", "/overview"])
def test_phone_width_has_no_sideways_scroll(open_page: OpenPage, server: Server, path: str) -> None:
    server.brain.on("[phone]", lambda step: FakeReply.text("fits on a phone"))
    run_id = server.submit("[phone] a run to look at on a small screen")
    server.wait_state(run_id, "COMPLETED")
    tab = open_page(PHONE)
    tab.login()
    tab.goto(f"/runs/{run_id}" if path == "run" else path)
    ready = {"/": f"tr[data-run-id='{run_id}']", "run": "pre.answer", "/overview": "figure"}
    tab.page.locator(ready[path]).first.wait_for()
    if path == "run":
        tab.page.locator("[data-fact='step']").filter(has_text="1 of 6").wait_for()
    width: Any = tab.page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"]
    tab.shot(f"phone-{path.strip('/') or 'runs'}")
