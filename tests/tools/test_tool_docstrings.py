"""Reading Google-style docstrings, and tidying generated schemas."""

import inspect

from harness.tools._docstrings import parse_docstring
from harness.tools._schema_clean import clean_schema


def test_summary_only() -> None:
    parsed = parse_docstring("Just this.")
    assert parsed.description == "Just this."
    assert parsed.params == {}


def test_sections_other_than_args_and_raises_are_kept() -> None:
    doc = inspect.cleandoc("""
        Find files.

        Arguments:
            pattern: Glob pattern.
            limit (int, optional): At most this many.
                Defaults to all.

        Example:
            find("*.py")

        Raises:
            ToolError: When the pattern is empty.
        Note:
            Hidden files are skipped.
    """)
    parsed = parse_docstring(doc)
    assert parsed.params == {
        "pattern": "Glob pattern.",
        "limit": "At most this many. Defaults to all.",
    }
    assert parsed.description == (
        'Find files.\n\nExample:\n    find("*.py")\n\nNote:\n    Hidden files are skipped.'
    )


def test_a_colon_in_prose_is_not_a_section() -> None:
    parsed = parse_docstring("Modes: fast or slow.\n\nArgs:\n    mode: Which.")
    assert parsed.description == "Modes: fast or slow."
    assert parsed.params == {"mode": "Which."}


def test_schema_refs_are_inlined_with_their_siblings() -> None:
    schema = {
        "type": "object",
        "title": "Outer",
        "properties": {
            "a": {"$ref": "#/$defs/A", "description": "An A."},
            "title": {"type": "string", "title": "Title"},
        },
        "$defs": {"A": {"type": "object", "title": "A", "properties": {"x": {"type": "integer"}}}},
    }
    assert clean_schema(schema) == {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "additionalProperties": False,
                "description": "An A.",
            },
            "title": {"type": "string"},
        },
        "additionalProperties": False,
    }
    assert schema["title"] == "Outer"


def test_dangling_and_recursive_refs_are_left_alone() -> None:
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/B"}}, "$defs": {"A": {}}}
    assert clean_schema(dangling)["$defs"] == {"A": {}}
    recursive = {
        "$ref": "#/$defs/N",
        "$defs": {
            "N": {
                "type": "object",
                "properties": {"next": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]}},
            }
        },
    }
    cleaned = clean_schema(recursive)
    assert cleaned["$ref"] == "#/$defs/N"
    assert cleaned["$defs"]["N"]["additionalProperties"] is False


def test_explicit_additional_properties_are_kept() -> None:
    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    assert clean_schema(schema)["additionalProperties"] is True
