"""With tracing off, OpenTelemetry is never imported: not by `import harness`, not by a run,
not by `harness trace`; and configured tracing without the extra fails clearly."""

import os
import subprocess
import sys
from pathlib import Path

from harness.observability import TraceSettings, capture_content, tracing_enabled

RUN = """
import asyncio, sys
from pathlib import Path
import harness
from harness import Agent, Harness
from harness.runtime import load_settings
from harness.testing import ScriptedModel

def otel():
    return [m for m, v in sys.modules.items() if m.startswith("opentelemetry") and v is not None]

assert not otel(), "import harness"

async def main():
    async with Harness(load_settings(Path(sys.argv[1]))) as h:
        result = await h.run(Agent(name="quiet", model=ScriptedModel(["hi"])), "say hi")
        record = await h.get(result.run_id)
    assert record.trace_parent is not None  # the context is stored all the same
    print(result.run_id)

asyncio.run(main())
assert not otel(), otel()
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def test_a_run_without_tracing_never_imports_opentelemetry(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(tmp_path)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("run_")


def test_traces_none_in_harness_toml_wins_over_the_environment(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text('[observability]\ntraces = "none"\n')
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(tmp_path)],
        env={**_env(), "OTEL_TRACES_EXPORTER": "otlp"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_when_tracing_is_on() -> None:
    off, otlp = TraceSettings(), TraceSettings(traces="otlp")
    assert not tracing_enabled(off, {})
    assert tracing_enabled(off, {"OTEL_TRACES_EXPORTER": "otlp"})
    assert not tracing_enabled(off, {"OTEL_TRACES_EXPORTER": "none"})
    assert tracing_enabled(otlp, {})
    assert not tracing_enabled(otlp, {"OTEL_SDK_DISABLED": "true"})
    assert not tracing_enabled(TraceSettings(traces="none"), {"OTEL_TRACES_EXPORTER": "otlp"})


def test_content_capture_is_opt_in() -> None:
    assert not capture_content(TraceSettings(), {})
    flag = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    assert capture_content(TraceSettings(), {flag: "true"})
    assert not capture_content(TraceSettings(capture_content=False), {flag: "true"})
    assert capture_content(TraceSettings(capture_content=True), {})


def test_the_observability_table_is_validated(tmp_path: Path) -> None:
    import pytest

    from harness.errors import ConfigError
    from harness.runtime import load_settings

    (tmp_path / "harness.toml").write_text(
        '[observability]\ntraces = "otlp"\ncapture_content = true\n'
    )
    assert load_settings(tmp_path).observability == TraceSettings(
        traces="otlp", capture_content=True
    )
    (tmp_path / "harness.toml").write_text('[observability]\ntraces = "jaeger"\n')
    with pytest.raises(ConfigError, match=r"key 'observability.traces'"):
        load_settings(tmp_path)
    (tmp_path / "harness.toml").write_text("[observability]\nsample = 1\n")
    with pytest.raises(ConfigError, match=r"observability.sample"):
        load_settings(tmp_path)


def test_tracing_configured_without_the_extra_says_what_to_install(tmp_path: Path) -> None:
    without_sdk = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if harness[otel] were not installed\n" + RUN
    )
    done = subprocess.run(
        [sys.executable, "-c", without_sdk, str(tmp_path)],
        env={**_env(), "OTEL_TRACES_EXPORTER": "otlp"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "pip install 'harness[otel]'" in done.stderr
    assert "ConfigError" in done.stderr
