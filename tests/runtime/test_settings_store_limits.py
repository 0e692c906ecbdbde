"""`[store]` and `[defaults] limits` in harness.toml, validated like every other key."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.usage import Limits
from harness.errors import ConfigError
from harness.runtime.harness import Harness
from harness.runtime.settings import load_settings

PG = "postgresql://agent@127.0.0.1:5432/harness"


@pytest.fixture(autouse=True)
def no_store_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_STORE", raising=False)
    monkeypatch.delenv("HARNESS_MODEL", raising=False)


def configure(home: Path, text: str) -> None:
    (home / "harness.toml").write_text(text)


def test_store_url_is_read_from_the_file(tmp_path: Path) -> None:
    configure(tmp_path, f'[store]\nurl = "{PG}"\n')
    assert load_settings(tmp_path).store == PG


def test_store_path_is_relative_to_the_home(tmp_path: Path) -> None:
    configure(tmp_path, '[store]\npath = "data/runs.db"\n')
    assert load_settings(tmp_path).store == str(tmp_path / "data" / "runs.db")


def test_without_a_store_key_the_home_keeps_the_store(tmp_path: Path) -> None:
    configure(tmp_path, '[defaults]\nstrategy = "react"\n')
    assert load_settings(tmp_path).store is None


def test_the_environment_wins_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(tmp_path, f'[store]\nurl = "{PG}"\n')
    monkeypatch.setenv("HARNESS_STORE", str(tmp_path / "env.db"))
    assert load_settings(tmp_path).store == str(tmp_path / "env.db")


async def test_a_harness_opens_the_store_the_file_names(tmp_path: Path) -> None:
    configure(tmp_path, '[store]\npath = "elsewhere/runs.db"\n')
    (tmp_path / "elsewhere").mkdir()
    async with Harness(load_settings(tmp_path), execute=False) as harness:
        assert await harness.list() == []
    assert (tmp_path / "elsewhere" / "runs.db").is_file()
    assert not (tmp_path / "harness.db").exists()


@pytest.mark.parametrize(
    ("text", "key", "says"),
    [
        ('[store]\nurl = "mysql://x@h/db"\n', "store.url", "is not a PostgreSQL URL"),
        ('[store]\nurl = "/var/lib/harness.db"\n', "store.url", "'path' for a SQLite file"),
        (f'[store]\nurl = "{PG}"\npath = "x.db"\n', "store", "not both"),
        ('[store]\npath = ""\n', "store.path", "at least 1 character"),
        ("[store]\npath = 5\n", "store.path", "valid string"),
        ('[store]\nhost = "db"\n', "store.host", "Extra inputs"),
    ],
)
def test_bad_store_values_name_the_file_and_the_key(
    tmp_path: Path, text: str, key: str, says: str
) -> None:
    configure(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'harness.toml'}: key '{key}'")
    assert says in message
    assert "\n" not in message


def test_limits_are_read_from_the_file(tmp_path: Path) -> None:
    configure(
        tmp_path,
        "[defaults]\nlimits = { max_steps = 7, max_tokens = 5000, max_cost_usd = 0.5, "
        "max_seconds = 90, max_tool_calls = 12 }\n",
    )
    limits = load_settings(tmp_path).default_limits
    assert (
        limits.max_steps,
        limits.max_tokens,
        limits.max_cost_usd,
        limits.max_seconds,
        limits.max_tool_calls,
    ) == (7, 5000, 0.5, 90.0, 12)


def test_limits_left_out_keep_their_defaults(tmp_path: Path) -> None:
    configure(tmp_path, "[defaults]\nlimits = { max_tokens = 100 }\n")
    assert load_settings(tmp_path).default_limits == Limits(max_tokens=100)


@pytest.mark.parametrize(
    ("limits", "key"),
    [
        ("{ max_steps = 0 }", "defaults.limits.max_steps"),
        ("{ max_tokens = -5 }", "defaults.limits.max_tokens"),
        ("{ max_cost_usd = 'cheap' }", "defaults.limits.max_cost_usd"),
        ("{ max_seconds = -1 }", "defaults.limits.max_seconds"),
        ("{ max_tool_calls = 1.5 }", "defaults.limits.max_tool_calls"),
        ("{ max_money = 3 }", "defaults.limits.max_money"),
    ],
)
def test_bad_limits_name_the_file_and_the_key(tmp_path: Path, limits: str, key: str) -> None:
    configure(tmp_path, f"[defaults]\nlimits = {limits}\n")
    with pytest.raises(ConfigError, match=rf"harness.toml: key '{key}'"):
        load_settings(tmp_path)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"[defaults]\nmodel = '\xff\xfe'\n", "not UTF-8 text"),
        (b"\x00\x01\x02binary", "not valid TOML"),
    ],
)
def test_a_file_that_is_not_toml_text_is_a_config_error(
    tmp_path: Path, content: bytes, says: str
) -> None:
    (tmp_path / "harness.toml").write_bytes(content)
    with pytest.raises(ConfigError, match=says):
        load_settings(tmp_path)


def test_a_config_file_that_is_a_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").mkdir()
    with pytest.raises(ConfigError, match="is a directory"):
        load_settings(tmp_path)
