"""`[models.NAME]` in harness.toml, `HARNESS_MODELS__NAME__KEY` over it, validated at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.gateway.pricing import Prices
from harness.gateway.profiles import LOCAL_PROFILE, ContextThresholds
from harness.runtime.settings import Settings, load_settings

FULL = """
[models.fast]
provider = "openai"
model = "qwen3-8b"
base_url = "http://127.0.0.1:8081/v1"
api_key_env = "FAST_KEY"
context_window = 32768
max_output_tokens = 2048
temperature = 0.6
top_p = 0.95
seed = 42
stop = ["</answer>"]
parallel_tool_calls = false
extra_body = { top_k = 20, min_p = 0.0 }
timeout_s = 120
max_retries = 4
fallbacks = ["local"]
concurrency = 2
prices = { input = 0.15, output = 0.6, cached_input = 0.075 }
tool_calls = "native"
native_tools = true
streaming = false
structured_output = false
context = { trim_at = 0.7, summarize_at = 0.85, stage_at = 0.97, keep_last_turns = 6 }
"""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model variables of the machine running the tests leak in."""
    import os

    for name in list(os.environ):
        if name.startswith("HARNESS_MODEL"):
            monkeypatch.delenv(name)


def settings_with(tmp_path: Path, text: str | None) -> Settings:
    if text is not None:
        (tmp_path / "harness.toml").write_text(text)
    return load_settings(tmp_path)


def error_of(tmp_path: Path, text: str | None) -> str:
    with pytest.raises(ConfigError) as caught:
        settings_with(tmp_path, text)
    return str(caught.value)


def test_every_key_of_a_profile_is_read(tmp_path: Path) -> None:
    profile = settings_with(tmp_path, FULL).profiles["fast"]
    assert profile.provider == "openai"
    assert (profile.model, profile.base_url, profile.api_key_env) == (
        "qwen3-8b",
        "http://127.0.0.1:8081/v1",
        "FAST_KEY",
    )
    assert (profile.context_window, profile.max_output_tokens) == (32768, 2048)
    assert (profile.temperature, profile.top_p, profile.seed) == (0.6, 0.95, 42)
    assert (profile.stop, profile.parallel_tool_calls) == (("</answer>",), False)
    assert profile.extra_body == {"top_k": 20, "min_p": 0.0}
    assert (profile.timeout_s, profile.max_retries, profile.concurrency) == (120.0, 4, 2)
    assert profile.fallbacks == ("local",)
    assert profile.prices == Prices(input=0.15, output=0.6, cached_input=0.075)
    assert (profile.tool_calls, profile.native_tools, profile.streaming) == ("native", True, False)
    assert profile.structured_output is False
    assert profile.context == ContextThresholds(
        trim_at=0.7, summarize_at=0.85, stage_at=0.97, keep_last_turns=6
    )


def test_the_built_in_local_profile_is_always_there(tmp_path: Path) -> None:
    assert settings_with(tmp_path, None).profiles == {"local": LOCAL_PROFILE}
    assert settings_with(tmp_path, FULL).profiles["local"] is LOCAL_PROFILE


def test_a_table_for_a_built_in_profile_changes_only_its_keys(tmp_path: Path) -> None:
    local = settings_with(tmp_path, "[models.local]\ncontext_window = 16384\n").profiles["local"]
    assert local.context_window == 16384
    assert local.base_url == LOCAL_PROFILE.base_url
    assert local.model == LOCAL_PROFILE.model


def test_a_price_table_may_give_some_prices(tmp_path: Path) -> None:
    profile = settings_with(tmp_path, "[models.p]\nprices = { output = 1.5 }\n").profiles["p"]
    assert profile.prices == Prices(input=0.0, output=1.5, cached_input=None)


def test_prices_are_unknown_until_given_and_zero_prices_declare_a_free_model(
    tmp_path: Path,
) -> None:
    profiles = settings_with(
        tmp_path,
        '[models.p]\nmodel = "x"\n[models.free]\nprices = { input = 0, output = 0 }\n',
    ).profiles
    assert profiles["p"].prices is None
    assert profiles["free"].prices == Prices()
    assert profiles["local"].prices == Prices()  # the built-in llama.cpp server is free


# ── errors name the file, the key path and the problem ────────────────────────


@pytest.mark.parametrize(
    ("text", "key", "says"),
    [
        ("[models.x]\ntemperature = 'hot'\n", "models.x.temperature", "valid number"),
        ("[models.x]\ncolour = 'red'\n", "models.x.colour", "Extra inputs are not permitted"),
        ("[models.x]\nprices = { input = -1 }\n", "models.x.prices.input", "cannot be negative"),
        ("[models.x]\nprices = { euros = 1 }\n", "models.x.prices.euros", "Extra inputs"),
        ("[models.x]\nprovider = 'cohere'\n", "models.x.provider", "unknown provider 'cohere'"),
        ("[models.x]\nmax_retries = 1.5\n", "models.x.max_retries", "valid integer"),
        ("[models.x]\nstop = 'END'\n", "models.x.stop", "valid list"),
        ("[models.x]\nfallbacks = ['nope']\n", "models.x.fallbacks", "no profile named 'nope'"),
        (
            "[models.a]\nfallbacks = ['b']\n[models.b]\nfallbacks = ['a']\n",
            "models.b.fallbacks",
            "cycle (a → b → a)",
        ),
        ("[models.x]\ntool_calls = 'maybe'\n", "models.x.tool_calls", "unknown tool call mode"),
        ("[defaults]\nmodel = 'gpt5'\n", "defaults.model", "unknown model 'gpt5'"),
    ],
)
def test_a_bad_profile_names_the_file_the_key_and_the_problem(
    tmp_path: Path, text: str, key: str, says: str
) -> None:
    message = error_of(tmp_path, text)
    assert str(tmp_path / "harness.toml") in message
    assert f"key '{key}'" in message
    assert says in message


def test_an_unknown_default_model_from_the_environment_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODEL", "gpt5")
    message = error_of(tmp_path, None)
    assert message.startswith("HARNESS_MODEL: unknown model 'gpt5'")
    monkeypatch.setenv("HARNESS_MODEL", "openai:gpt-4.1-mini")
    assert settings_with(tmp_path, None).default_model == "openai:gpt-4.1-mini"


# ── environment overrides ─────────────────────────────────────────────────────


def test_the_environment_overrides_a_key_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODELS__FAST__TEMPERATURE", "0.1")
    monkeypatch.setenv("HARNESS_MODELS__FAST__MAX_RETRIES", "0")
    monkeypatch.setenv("HARNESS_MODELS__FAST__STREAMING", "true")
    monkeypatch.setenv("HARNESS_MODELS__FAST__PRICES__INPUT", "0.2")
    profile = settings_with(tmp_path, FULL).profiles["fast"]
    assert (profile.temperature, profile.max_retries, profile.streaming) == (0.1, 0, True)
    assert profile.prices == Prices(input=0.2, output=0.6, cached_input=0.075)
    assert profile.model == "qwen3-8b"


def test_the_environment_changes_a_built_in_profile_without_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODELS__LOCAL__BASE_URL", "http://127.0.0.1:9999/v1")
    monkeypatch.setenv("HARNESS_MODELS__LOCAL__CONTEXT_WINDOW", "8192")
    local = settings_with(tmp_path, None).profiles["local"]
    assert (local.base_url, local.context_window) == ("http://127.0.0.1:9999/v1", 8192)


def test_the_environment_can_add_a_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_MODELS__GPU__MODEL", "qwen3-32b")
    monkeypatch.setenv("HARNESS_MODELS__GPU__BASE_URL", "http://10.0.0.5:8000/v1")
    monkeypatch.setenv("HARNESS_MODELS__GPU__FALLBACKS", "local, openai:gpt-4.1-mini")
    monkeypatch.setenv("HARNESS_MODELS__GPU__STOP", '["</s>", "END"]')
    monkeypatch.setenv("HARNESS_MODELS__GPU__EXTRA_BODY", '{"top_k": 20}')
    monkeypatch.setenv("HARNESS_MODEL", "gpu")
    settings = settings_with(tmp_path, None)
    gpu = settings.profiles["gpu"]
    assert settings.default_model == "gpu"
    assert (gpu.model, gpu.base_url) == ("qwen3-32b", "http://10.0.0.5:8000/v1")
    assert gpu.fallbacks == ("local", "openai:gpt-4.1-mini")
    assert gpu.stop == ("</s>", "END")
    assert gpu.extra_body == {"top_k": 20}


def test_profile_names_match_ignoring_case_and_punctuation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODELS__GPT_4O__TIMEOUT_S", "5")
    profiles = settings_with(tmp_path, '[models.gpt-4o]\nmodel = "gpt-4o"\n').profiles
    assert profiles["gpt-4o"].timeout_s == 5.0
    assert "gpt_4o" not in profiles


def test_an_empty_variable_unsets_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_MODELS__FAST__CONCURRENCY", "")
    monkeypatch.setenv("HARNESS_MODELS__FAST__PRICES__CACHED_INPUT", "")
    profile = settings_with(tmp_path, FULL).profiles["fast"]
    assert profile.concurrency is None
    assert profile.prices.cached_input is None


@pytest.mark.parametrize(
    ("variable", "value", "key", "says"),
    [
        ("HARNESS_MODELS__FAST__TEMPERATURE", "warm", "models.fast.temperature", "valid number"),
        ("HARNESS_MODELS__FAST__TEMPERATURE", "-1", "models.fast.temperature", "0 or more"),
        ("HARNESS_MODELS__FAST__COLOUR", "red", "models.fast.colour", "Extra inputs"),
        ("HARNESS_MODELS__FAST__PRICES__OUTPUT", "-2", "models.fast.prices.output", "negative"),
        ("HARNESS_MODELS__FAST__EXTRA_BODY", "{top_k: 1}", "models.fast.extra_body", "Expecting"),
        ("HARNESS_MODELS__FAST__EXTRA_BODY", "[1]", "models.fast.extra_body", "JSON object"),
        ("HARNESS_MODELS__FAST__FALLBACKS", "ghost", "models.fast.fallbacks", "no profile"),
        ("HARNESS_MODELS__NEW__PROVIDER", "cohere", "models.new.provider", "unknown provider"),
    ],
)
def test_a_bad_variable_is_named_in_the_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    key: str,
    says: str,
) -> None:
    monkeypatch.setenv(variable, value)
    message = error_of(tmp_path, FULL)
    assert message.startswith(f"environment variable {variable}: key '{key}'")
    assert says in message


def test_a_variable_without_a_key_says_how_to_write_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODELS__FAST", "qwen")
    message = error_of(tmp_path, None)
    assert "HARNESS_MODELS__FAST" in message
    assert "HARNESS_MODELS__LOCAL__BASE_URL" in message


def test_an_ambiguous_profile_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODELS__A_B__TIMEOUT_S", "5")
    message = error_of(tmp_path, '[models."a-b"]\nmodel = "x"\n[models."a.b"]\nmodel = "y"\n')
    assert "could be profile a-b or a.b" in message


# ── context thresholds ────────────────────────────────────────────────────────


def test_context_thresholds_may_be_given_in_part(tmp_path: Path) -> None:
    text = "[models.local]\ncontext_window = 8192\n[models.local.context]\nkeep_last_turns = 2\n"
    local = settings_with(tmp_path, text).profiles["local"]
    assert local.context == ContextThresholds(keep_last_turns=2)
    assert local.structured_output is True


def test_the_environment_sets_one_context_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODELS__FAST__CONTEXT__TRIM_AT", "0.65")
    monkeypatch.setenv("HARNESS_MODELS__FAST__STRUCTURED_OUTPUT", "true")
    fast = settings_with(tmp_path, FULL).profiles["fast"]
    assert fast.context == ContextThresholds(
        trim_at=0.65, summarize_at=0.85, stage_at=0.97, keep_last_turns=6
    )
    assert fast.structured_output is True


@pytest.mark.parametrize(
    ("table", "key", "problem"),
    [
        ("context = { trim_at = 1.5 }", "models.m.context.trim_at", "less than or equal to 1"),
        ("context = { keep_last_turns = 0 }", "models.m.context.keep_last_turns", "greater"),
        ("context = { stage = 0.9 }", "models.m.context.stage", "Extra inputs"),
        (
            "context = { trim_at = 0.9, summarize_at = 0.8 }",
            "models.m.context.summarize_at",
            "must not be below trim_at",
        ),
        (
            "context_window = 8192\ncontext = { trim_at = 0.9 }",
            "models.m.context",
            "trim_at <= summarize_at",
        ),
    ],
)
def test_bad_context_thresholds_name_the_key(
    tmp_path: Path, table: str, key: str, problem: str
) -> None:
    message = error_of(tmp_path, f"[models.m]\n{table}\n")
    assert f"key '{key}'" in message
    assert problem in message
    assert "harness.toml" in message
