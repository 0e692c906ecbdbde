"""Every route refuses callers without the right token; cookie logins, CSRF, CORS, logs."""

import logging
import re

import httpx
import pytest
from server_support import NAMES, TOKENS, Api, bearer

from harness.runtime.server_config import ROLES
from harness.server._http import APIRoute
from harness.server.app import create_app

PUBLIC = {"/healthz", "/readyz", "/login", "/logout"}
SHELL = {"/", "/overview", "/runs/{run_id}"}
ADMIN = {("POST", "/api/experiments/{name}/stop")}
"""The routes that need more than `operate` (every other GET needs `read`, every other verb
`operate`)."""


def routes(api: Api) -> list[tuple[str, str, str | None]]:
    """(method, path, role needed) of every route of the app, from the app itself."""
    found = []
    for route in flatten(api.app.api.routes):
        if not isinstance(route, APIRoute):
            continue
        needs = [d.call.__name__ for d in route.dependant.dependencies if d.call is not None]
        role = next((n.removeprefix("require_") for n in needs if n.startswith("require_")), None)
        for method in sorted(route.methods):
            found.append((method, route.path, role))
    return found


def flatten(routes: list) -> list:
    """The routes, those of included routers too (FastAPI keeps those behind a wrapper)."""
    flat = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        flat += flatten(inner.routes) if inner is not None else [route]
    return flat


def concrete(path: str) -> str:
    return path.replace("{run_id}", "run_x").replace("{call_id}", "call_x").replace("{name}", "x")


async def test_every_route_refuses_no_token_a_wrong_token_and_a_weaker_role(api: Api) -> None:
    listed = routes(api)
    assert len(listed) >= 20
    checked = 0
    for method, path, role in listed:
        if path in PUBLIC or path in SHELL:
            assert role is None, path
            continue
        wanted = "admin" if (method, path) in ADMIN else "read" if method == "GET" else "operate"
        assert role == wanted, (method, path, role)
        url = concrete(path)
        missing = await api.client.request(method, url)
        assert missing.status_code == 401, (method, path)
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert missing.headers["content-type"] == "application/problem+json"
        for wrong in ("Bearer nope", f"Bearer {TOKENS['admin']}x", "Basic abc", "Bearer "):
            refused = await api.client.request(method, url, headers={"Authorization": wrong})
            assert refused.status_code == 401, (method, path, wrong)
        cookie = await api.client.request(method, url, headers=jar("forged"))
        assert cookie.status_code == 401, (method, path)
        for weaker in ROLES[: ROLES.index(role)]:
            weak = await api.client.request(method, url, headers=bearer(weaker))
            assert weak.status_code == 403, (method, path, weaker)
            assert f"needs the {role} role" in weak.json()["detail"]
        if path == "/api/events":
            checked += 1
            continue  # endless: ASGITransport would wait for its end (tested over uvicorn)
        allowed = await api.client.request(method, url, headers=bearer(role))
        assert allowed.status_code not in (401, 403), (method, path, allowed.text)
        checked += 1
    assert checked >= 15


async def test_the_shell_and_public_routes(api: Api) -> None:
    for path in SHELL:
        page = await api.client.get(concrete(path))
        assert page.status_code == 303
        assert page.headers["location"] == "/login"
    assert (await api.client.get("/login")).status_code == 200
    assert (await api.client.get("/static/login.html")).status_code == 200
    assert (await api.client.get("/static/../app.py")).status_code == 404


def jar(session: str) -> dict[str, str]:
    return {"Cookie": f"harness_session={session}"}


async def login(api: Api, role: str) -> tuple[str, str]:
    """Log in with the token of `role`; returns the session cookie and its CSRF token."""
    done = await api.client.post("/login", data={"token": TOKENS[role]})
    assert done.status_code == 303
    assert done.headers["location"] == "/"
    cookie = done.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Path=/" in cookie
    assert "Secure" not in cookie  # plain http here
    session = re.match(r"harness_session=([^;]+)", cookie)
    assert session is not None
    assert TOKENS[role] not in cookie
    api.client.cookies.clear()  # each request below names its cookie
    me = await api.client.get("/api/me", headers=jar(session[1]))
    assert me.status_code == 200
    assert me.json()["role"] == role
    return session[1], me.json()["csrf"]


async def test_cookie_login_needs_the_csrf_token_to_change_state(api: Api) -> None:
    session, csrf = await login(api, "operate")
    cookie = jar(session)
    shell = await api.client.get("/runs/run_x", headers=cookie)
    assert shell.status_code == 200
    assert "<html" in shell.text.lower()
    run_id = await api.submit("deployer")
    await api.state(run_id, "WAITING_TOOL")
    without = await api.client.post(f"/api/runs/{run_id}/cancel", headers=cookie)
    assert without.status_code == 403
    assert "X-CSRF-Token" in without.json()["detail"]
    wrong = await api.client.post(
        f"/api/runs/{run_id}/cancel", headers={**cookie, "X-CSRF-Token": csrf + "x"}
    )
    assert wrong.status_code == 403
    right = await api.client.post(
        f"/api/runs/{run_id}/cancel", headers={**cookie, "X-CSRF-Token": csrf}
    )
    assert right.status_code == 202
    await api.state(run_id, "CANCELLED")
    foreign = await api.client.post("/logout", headers={**cookie, "Origin": "https://evil.example"})
    assert foreign.status_code == 403  # another site cannot end the session either
    assert (await api.client.get("/api/me", headers=cookie)).status_code == 200
    out = await api.client.post("/logout", headers={**cookie, "Origin": "http://testserver"})
    assert out.status_code == 303
    assert (await api.client.get("/api/me", headers=cookie)).status_code == 401


async def test_a_read_session_cannot_steer(api: Api) -> None:
    session, csrf = await login(api, "read")
    refused = await api.client.post(
        "/api/runs",
        json={"task": "x", "agent": "quick"},
        headers={**jar(session), "X-CSRF-Token": csrf},
    )
    assert refused.status_code == 403


async def test_bad_logins(api: Api) -> None:
    bad = await api.client.post("/login", data={"token": "guess"})
    assert bad.status_code == 401
    assert "not valid" in bad.text
    assert "set-cookie" not in bad.headers
    as_json = await api.client.post("/login", json={"token": "guess"})
    assert as_json.status_code == 401
    assert as_json.headers["content-type"] == "application/problem+json"
    empty = await api.client.post("/login", content=b"")
    assert empty.status_code == 401
    foreign = await api.client.post(
        "/login", data={"token": TOKENS["admin"]}, headers={"Origin": "https://evil.example"}
    )
    assert foreign.status_code == 403
    good_json = await api.client.post(
        "/login", json={"token": TOKENS["read"]}, headers={"Origin": "http://testserver"}
    )
    assert good_json.status_code == 303


async def test_no_cors_unless_configured(api: Api) -> None:
    asked = await api.client.options(
        "/api/runs",
        headers={"Origin": "https://other.example", "Access-Control-Request-Method": "GET"},
    )
    assert "access-control-allow-origin" not in asked.headers
    got = await api.client.get(
        "/api/runs", headers={**bearer("read"), "Origin": "https://x.example"}
    )
    assert "access-control-allow-origin" not in got.headers


async def test_cors_for_configured_origins(api: Api) -> None:
    from server_support import server_config

    app = create_app(api.harness, server_config(cors_origins=("https://ops.example",)), env={})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        ok = await client.get(
            "/api/runs", headers={**bearer("read"), "Origin": "https://ops.example"}
        )
        assert ok.headers["access-control-allow-origin"] == "https://ops.example"
        other = await client.get(
            "/api/runs", headers={**bearer("read"), "Origin": "https://evil.example"}
        )
        assert "access-control-allow-origin" not in other.headers


async def test_the_environment_token_is_an_admin_token(api: Api) -> None:
    app = create_app(api.harness, env={"HARNESS_SERVER_TOKEN": "env-secret-token"})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        me = await client.get("/api/me", headers={"Authorization": "Bearer env-secret-token"})
        assert me.json()["role"] == "admin"
        assert (await client.get("/api/me", headers=bearer("read"))).json()["role"] == "read"
        wrong = {"Authorization": "Bearer env-secret-tokenX"}
        assert (await client.get("/api/me", headers=wrong)).status_code == 401


async def test_logs_never_hold_tokens_cookies_or_tool_results(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    run_id = await api.submit("deployer")
    await api.state(run_id, "WAITING_TOOL")
    call_id = (await api.get("/api/approvals")).json()["approvals"][0]["call_id"]
    await api.post(f"/api/runs/{run_id}/approvals/{call_id}", decision="approve")
    await api.state(run_id, "COMPLETED")
    messages = (await api.get(f"/api/runs/{run_id}/messages", role="admin")).json()["messages"]
    assert "x" * 500 in messages[3]["content"]  # the result is served, never logged
    await api.get(f"/api/runs/{run_id}/events")
    session, csrf = await login(api, "operate")
    await api.client.get("/api/runs", headers=jar(session))
    await api.client.post("/login", data={"token": "wrong-guess-123"})
    await api.client.get("/api/runs", headers={"Authorization": "Bearer wrong-guess-456"})
    access = [r for r in caplog.records if r.name == "harness.server.access"]
    assert len(access) >= 8
    assert any(f"/api/runs/{run_id}/messages 200" in r.getMessage() for r in access)
    assert any(f"by={NAMES['operate']}" in r.getMessage() for r in access)
    text = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    for secret in (*TOKENS.values(), session, csrf, "wrong-guess-123", "wrong-guess-456"):
        assert secret not in text
    assert "x" * 100 not in text
