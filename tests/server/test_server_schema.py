"""Schemathesis over /openapi.json of a real `harness serve`: no request makes a 5xx."""

from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, given, settings
from server_support import bearer, serving, write_config

EXAMPLES = 12
"""Generated requests per operation: bounded, so the suite stays quick."""


def test_no_generated_request_gets_a_server_error(tmp_path: Path) -> None:
    write_config(tmp_path, "http://127.0.0.1:9/v1")  # no model is called: --no-execute
    auth = bearer("admin")
    with serving(tmp_path, "--no-execute") as (url, _):
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json", headers=auth)
        schema = schema.exclude(path="/api/events")  # endless by design: tested on its own
        checked: list[str] = []
        for found in schema.get_all_operations():
            operation = found.ok()

            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy())
            def call(case: schemathesis.Case) -> None:
                response = case.call(base_url=url, headers=auth, timeout=15)
                assert response.status_code < 500, (case.as_curl_command(), response.text)
                if response.status_code >= 400:
                    kind = response.headers.get("content-type")
                    kinds = kind if isinstance(kind, list) else [kind]
                    assert kinds == ["application/problem+json"], (response.status_code, kinds)

            call()
            checked.append(operation.label)
    assert len(checked) >= 15, checked
