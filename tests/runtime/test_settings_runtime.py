"""`[runtime]` of harness.toml: the engine of the runs, validated like every other key.

The Temporal API key comes from HARNESS_TEMPORAL_API_KEY only: the file refuses it, and no
repr or error message shows it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.runtime.runtime_settings import RuntimeSettings
from harness.runtime.settings import load_settings

KEY = "tc-secret-5f0c2a9e"
HARNESS = str(Path(sys.executable).parent / "harness")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in list(os.environ):
        if variable.startswith("HARNESS_RUNTIME__") or variable == "HARNESS_TEMPORAL_API_KEY":
            monkeypatch.delenv(variable)


def configure(home: Path, text: str) -> Path:
    path = home / "harness.toml"
    path.write_text(text)
    return path


def test_without_a_runtime_table_runs_stay_embedded(tmp_path: Path) -> None:
    assert load_settings(tmp_path).runtime == RuntimeSettings()
    configure(tmp_path, '[defaults]\nstrategy = "react"\n')
    runtime = load_settings(tmp_path).runtime
    assert runtime.backend == "embedded"
    assert not runtime.temporal
    assert (runtime.temporal_address, runtime.namespace, runtime.task_queue) == (
        "127.0.0.1:7233",
        "default",
        "harness",
    )


def test_the_table_is_read(tmp_path: Path) -> None:
    configure(
        tmp_path,
        '[runtime]\nbackend = "temporal"\ntemporal_address = "temporal.internal:7233"\n'
        'namespace = "agents.prod"\ntask_queue = "support-agents"\ntemporal_tls = true\n'
        "temporal_history_events = 2000\n",
    )
    assert load_settings(tmp_path).runtime == RuntimeSettings(
        backend="temporal",
        temporal_address="temporal.internal:7233",
        namespace="agents.prod",
        task_queue="support-agents",
        temporal_tls=True,
        temporal_history_events=2000,
    )


def test_the_environment_sets_each_key_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(tmp_path, '[runtime]\nbackend = "embedded"\ntask_queue = "from-file"\n')
    monkeypatch.setenv("HARNESS_RUNTIME__BACKEND", "temporal")
    monkeypatch.setenv("HARNESS_RUNTIME__TEMPORAL_ADDRESS", "127.0.0.1:7300")
    monkeypatch.setenv("HARNESS_RUNTIME__NAMESPACE", "staging")
    monkeypatch.setenv("HARNESS_RUNTIME__TEMPORAL_TLS", "true")
    runtime = load_settings(tmp_path).runtime
    assert runtime == RuntimeSettings(
        backend="temporal",
        temporal_address="127.0.0.1:7300",
        namespace="staging",
        task_queue="from-file",
        temporal_tls=True,
    )
    monkeypatch.setenv("HARNESS_RUNTIME__TASK_QUEUE", "")
    assert load_settings(tmp_path).runtime.task_queue == "harness", "empty unsets the key"


def test_the_environment_alone_switches_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_RUNTIME__BACKEND", "temporal")
    assert load_settings(tmp_path).runtime.backend == "temporal"


@pytest.mark.parametrize(
    ("text", "key", "says"),
    [
        ('backend = "dask"', "runtime.backend", "'embedded' or 'temporal'"),
        ('temporal_address = "localhost"', "runtime.temporal_address", "is not host:port"),
        ('temporal_address = "127.0.0.1:99999"', "runtime.temporal_address", "not host:port"),
        ('temporal_address = "http://x:7233"', "runtime.temporal_address", "not host:port"),
        ('namespace = "two words"', "runtime.namespace", "should match pattern"),
        ('namespace = ""', "runtime.namespace", "should match pattern"),
        ('task_queue = ""', "runtime.task_queue", "at least 1 character"),
        ('task_queue = " q"', "runtime.task_queue", "no surrounding spaces"),
        ('task_queue = "/_sys/q"', "runtime.task_queue", "/_sys/"),
        ('temporal_tls = "maybe"', "runtime.temporal_tls", "valid boolean"),
        ("temporal_history_events = 5", "runtime.temporal_history_events", "greater than or"),
        ('temporal_tls_ca = "ca.pem"', "runtime", "temporal_tls_ca needs temporal_tls = true"),
        (
            'temporal_tls = true\ntemporal_tls_cert = "c.pem"',
            "runtime",
            "temporal_tls_cert and temporal_tls_key come together",
        ),
        ('temporal_tls = true\ntemporal_tls_key = ""', "runtime.temporal_tls_key", "at least 1"),
        ("temporal_history_events = 60000", "runtime.temporal_history_events", "less than or"),
        ('temporal_adress = "x:1"', "runtime.temporal_adress", "Extra inputs"),
    ],
)
def test_a_wrong_key_names_the_key_and_the_file(
    tmp_path: Path, text: str, key: str, says: str
) -> None:
    path = configure(tmp_path, f"[runtime]\n{text}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    assert f"{path}: key '{key}'" in str(caught.value)
    assert says in str(caught.value)


def test_a_wrong_variable_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_RUNTIME__BACKEND", "ray")
    with pytest.raises(ConfigError, match=r"environment variable HARNESS_RUNTIME__BACKEND: key "):
        load_settings(tmp_path)
    monkeypatch.delenv("HARNESS_RUNTIME__BACKEND")
    monkeypatch.setenv("HARNESS_RUNTIME__", "x")
    with pytest.raises(ConfigError, match=r"as in HARNESS_RUNTIME__BACKEND"):
        load_settings(tmp_path)


@pytest.mark.parametrize("key", ["temporal_api_key", "api_key"])
def test_the_file_refuses_an_api_key_without_echoing_it(tmp_path: Path, key: str) -> None:
    path = configure(tmp_path, f'[runtime]\nbackend = "temporal"\n{key} = "{KEY}"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    message = str(caught.value)
    assert f"{path}: key 'runtime'" in message
    assert "HARNESS_TEMPORAL_API_KEY" in message
    assert KEY not in message


def test_a_variable_cannot_put_the_key_in_the_table_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_RUNTIME__API_KEY", KEY)
    with pytest.raises(ConfigError, match="set the environment variable HARNESS_TEMPORAL_API_KEY"):
        load_settings(tmp_path)


def test_the_api_key_comes_from_its_variable_and_is_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(tmp_path, '[runtime]\nbackend = "temporal"\ntemporal_tls = true\n')
    monkeypatch.setenv("HARNESS_TEMPORAL_API_KEY", KEY)
    settings = load_settings(tmp_path)
    assert settings.runtime.temporal_api_key == KEY
    assert KEY not in repr(settings)
    assert KEY not in repr(settings.runtime)
    assert KEY not in str(settings)


def test_an_api_key_never_travels_without_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = configure(tmp_path, '[runtime]\nbackend = "temporal"\n')
    monkeypatch.setenv("HARNESS_TEMPORAL_API_KEY", KEY)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    assert f"{path}: key 'runtime.temporal_tls'" in str(caught.value)
    assert KEY not in str(caught.value)


def test_an_api_key_is_ignored_by_the_embedded_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(tmp_path, '[defaults]\nstrategy = "react"\n')
    monkeypatch.setenv("HARNESS_TEMPORAL_API_KEY", KEY)
    assert load_settings(tmp_path).runtime.backend == "embedded"


def test_the_command_line_never_prints_the_api_key(tmp_path: Path) -> None:
    configure(tmp_path, '[runtime]\nbackend = "temporal"\ntemporal_tls = true\n')
    env = {**os.environ, "HARNESS_HOME": str(tmp_path), "HARNESS_TEMPORAL_API_KEY": KEY}
    shown = subprocess.run(
        [HARNESS, "config", "show", "--json"], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(shown.stdout)
    refused = subprocess.run(
        [HARNESS, "config", "show"],
        env={**env, "HARNESS_RUNTIME__TEMPORAL_TLS": "false"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 2
    assert "HARNESS_TEMPORAL_API_KEY" in refused.stderr
    for output in (shown.stdout, shown.stderr, refused.stdout, refused.stderr):
        assert KEY not in output


def test_config_show_says_where_the_runs_go_and_where_each_key_came_from(tmp_path: Path) -> None:
    env = {**os.environ, "HARNESS_HOME": str(tmp_path)}
    env.pop("HARNESS_TEMPORAL_API_KEY", None)
    embedded = subprocess.run(
        [HARNESS, "config", "show", "--json"], env=env, capture_output=True, text=True, check=True
    )
    rows = json.loads(embedded.stdout)
    assert rows["runtime.backend"] == {"value": "embedded", "source": "built-in default"}
    assert not any(k.startswith("runtime.temporal") for k in rows)  # nothing to say about it
    configure(
        tmp_path, '[runtime]\nbackend = "temporal"\nnamespace = "prod"\ntemporal_tls = true\n'
    )
    env["HARNESS_RUNTIME__TASK_QUEUE"] = "billing"
    unset = json.loads(
        subprocess.run(
            [HARNESS, "config", "show", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert {k: v for k, v in unset.items() if k.startswith("runtime.")} == {
        "runtime.backend": {"value": "temporal", "source": "runtime.backend"},
        "runtime.temporal_address": {"value": "127.0.0.1:7233", "source": "built-in default"},
        "runtime.namespace": {"value": "prod", "source": "runtime.namespace"},
        "runtime.task_queue": {"value": "billing", "source": "HARNESS_RUNTIME__TASK_QUEUE"},
        "runtime.temporal_tls": {"value": True, "source": "runtime.temporal_tls"},
        **{
            f"runtime.temporal_tls_{k}": {"value": None, "source": "built-in default"}
            for k in ("ca", "cert", "key", "domain")
        },
        "runtime.temporal_history_events": {"value": 10_000, "source": "built-in default"},
        "runtime.temporal_api_key": {"value": None, "source": "HARNESS_TEMPORAL_API_KEY (unset)"},
    }
    env["HARNESS_TEMPORAL_API_KEY"] = KEY
    table = subprocess.run(
        [HARNESS, "config", "show"], env=env, capture_output=True, text=True, check=True
    ).stdout
    key_row = next(line for line in table.splitlines() if line.startswith("runtime.temporal_api"))
    assert key_row.split()[1:] == ["(set,", "hidden)", "HARNESS_TEMPORAL_API_KEY"]
    assert KEY not in table
