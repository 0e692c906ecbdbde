from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.gateway import resolve_model
from harness.gateway.model import Model
from harness.gateway.profiles import LOCAL_PROFILE
from harness.gateway.providers.openai import OpenAIModel
from harness.runtime.settings import harness_home, load_settings


def provider_of(model: Model) -> Model:
    """The provider model at the bottom of a stack of wrappers."""
    while (inner := getattr(model, "inner", None)) is not None:
        model = inner
    return model


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    settings = load_settings(tmp_path)
    assert settings.home == tmp_path
    assert settings.default_model == "local"
    assert dict(settings.profiles) == {"local": LOCAL_PROFILE}


def test_home_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_HOME", "/srv/agents")
    assert harness_home() == Path("/srv/agents")
    monkeypatch.delenv("HARNESS_HOME")
    assert harness_home() == Path(".harness")


def test_profiles_are_read_and_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    (tmp_path / "harness.toml").write_text(
        '[defaults]\nmodel = "qwen"\n\n'
        '[models.qwen]\nmodel = "qwen3-8b"\nbase_url = "http://127.0.0.1:8081/v1"\n'
        'api_key_env = "QWEN_KEY"\ntimeout_s = 30\n'
    )
    settings = load_settings(tmp_path)
    assert settings.default_model == "qwen"
    profile = settings.profiles["qwen"]
    assert (profile.model, profile.base_url, profile.timeout_s) == (
        "qwen3-8b",
        "http://127.0.0.1:8081/v1",
        30.0,
    )
    monkeypatch.setenv("HARNESS_MODEL", "local")
    assert load_settings(tmp_path).default_model == "local"
    model = resolve_model("qwen", settings.profiles)
    assert isinstance(provider_of(model), OpenAIModel)
    assert "qwen" in model.name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[models.x]\ntimeout_s = 'soon'\n", "key 'models.x.timeout_s'"),
        ("[models.x]\ncolour = 'red'\n", "key 'models.x.colour'"),
        ("[runtime\n", "not valid TOML"),
    ],
)
def test_bad_config_names_the_file_and_the_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "harness.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_unknown_model_names_what_is_possible() -> None:
    with pytest.raises(ConfigError, match=r"unknown model 'gpt5'.*local.*openai:MODEL_NAME"):
        resolve_model("gpt5", {})


def test_openai_prefix_and_base_url_override() -> None:
    model = resolve_model("openai:qwen3", {}, base_url="http://127.0.0.1:1234/v1")
    provider = provider_of(model)
    assert isinstance(provider, OpenAIModel)
    assert provider.base_url == "http://127.0.0.1:1234/v1"
    assert model.name == "openai:qwen3"


def test_approval_policy_is_read_from_the_file(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text(
        '[approvals.tools]\nwrite_file = "ask"\n\n'
        '[[approvals.rules]]\ntool = "bash"\nwhen = { command = "git push|rm -rf" }\n'
        'decision = "deny"\nreason = "never from agents"\n'
    )
    policy = load_settings(tmp_path).approvals
    assert policy.tools == {"write_file": "ask"}
    (rule,) = policy.rules
    assert (rule.tool, rule.decision, rule.reason) == ("bash", "deny", "never from agents")
    from harness.core import ToolCall

    push = ToolCall(id="1", name="bash", arguments='{"command": "git push origin"}')
    ls = ToolCall(id="2", name="bash", arguments='{"command": "ls"}')
    assert policy.decide(push, None).decision == "deny"
    assert policy.decide(ls, None).decision == "auto"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[approvals.tools]\nbash = "maybe"\n', "key 'approvals.tools.bash'"),
        ('[[approvals.rules]]\nwhen = { command = "(" }\n', "key 'approvals.rules'"),
    ],
)
def test_bad_approvals_name_the_key(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "harness.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    assert expected in str(caught.value)
