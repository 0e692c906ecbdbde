"""The formats by name, and which format a model family writes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from harness.errors import ConfigError
from harness.gateway.textcalls.base import TextFormat
from harness.gateway.textcalls.command_r import CommandRFormat
from harness.gateway.textcalls.deepseek import DeepSeekFormat
from harness.gateway.textcalls.functionary import FunctionaryFormat
from harness.gateway.textcalls.harmony import HarmonyFormat
from harness.gateway.textcalls.hermes import HermesFormat
from harness.gateway.textcalls.kimi import KimiK2Format
from harness.gateway.textcalls.llama3 import Llama3JsonFormat
from harness.gateway.textcalls.mistral import MistralFormat
from harness.gateway.textcalls.plain import PlainFormat
from harness.gateway.textcalls.pythonic import PythonicFormat
from harness.gateway.textcalls.qwen3_coder import Qwen3CoderFormat

__all__ = ["FORMATS", "family_format", "get_format"]

FORMATS: Final[Mapping[str, TextFormat]] = MappingProxyType(
    {
        f.name: f
        for f in (
            HermesFormat(),
            Qwen3CoderFormat(),
            Llama3JsonFormat(),
            PythonicFormat(
                "pythonic", opening="<|python_start|>", closing="<|python_end|>", bare=True
            ),
            PythonicFormat(
                "pythonic_lfm2",
                opening="<|tool_call_start|>",
                closing="<|tool_call_end|>",
                bare=False,
            ),
            MistralFormat("mistral", "array"),
            MistralFormat("mistral_v11", "name_args"),
            MistralFormat("mistral_v13", "call_id"),
            HarmonyFormat(),
            DeepSeekFormat("deepseek_v3", fenced=False),
            DeepSeekFormat("deepseek_r1", fenced=True),
            KimiK2Format(),
            FunctionaryFormat(),
            CommandRFormat(),
            PlainFormat(),
        )
    }
)
"""Every format by name; `auto` is not among them (see `get_format`)."""

_FAMILIES: Final = (
    ("gpt-oss", "harmony"),
    ("qwen3-coder", "qwen3_coder"),
    ("qwen3.5", "qwen3_coder"),
    ("qwen3-5", "qwen3_coder"),
    ("qwen35", "qwen3_coder"),
    ("kimi", "kimi_k2"),
    ("deepseek-r1", "deepseek_r1"),
    ("deepseek", "deepseek_v3"),
    ("functionary", "functionary_v3.1"),
    ("command-r", "command_r7b"),
    ("command-a", "command_r7b"),
    ("lfm2", "pythonic_lfm2"),
    ("llama-4", "pythonic"),
    ("llama4", "pythonic"),
    ("llama", "llama3_json"),
    ("devstral", "mistral_v13"),
    ("magistral", "mistral_v13"),
    ("mistral-small-3.2", "mistral_v13"),
    ("ministral", "mistral_v11"),
    ("mistral-large", "mistral_v11"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("nemo", "mistral"),
    ("qwen", "hermes"),
    ("qwq", "hermes"),
    ("hermes", "hermes"),
    ("granite", "hermes"),
)
"""Substrings of a model name (lower case, `_` and spaces as `-`), most specific first."""


def family_format(family: str | None) -> str | None:
    """The format a model family writes, from its name (`Qwen2.5-7B-Instruct` -> hermes)."""
    if not family:
        return None
    key = re.sub(r"[\s_]+", "-", family.lower())
    return next((name for part, name in _FAMILIES if part in key), None)


def get_format(name: str) -> TextFormat:
    """The format called `name`.

    Raises:
        ConfigError: No format has that name.
    """
    try:
        return FORMATS[name]
    except KeyError:
        known = ", ".join(["auto", *sorted(FORMATS)])
        raise ConfigError(f"unknown tool-call format {name!r}: use one of {known}") from None
