"""`ToolSpec` and the public surface of `harness.tools`."""

import subprocess
import sys

import pytest

import harness.tools
from harness.core import ToolDefinition
from harness.errors import ToolDefinitionError
from harness.tools import ToolSpec

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def search(q: str) -> str:
    return q


def test_public_names_are_pinned() -> None:
    assert set(harness.tools.__all__) == {
        "NO_OUTPUT",
        "READ_RESULT",
        "Approval",
        "ApprovalDecision",
        "ApprovalHandler",
        "ApprovalPolicy",
        "ApprovalRequest",
        "ApprovalRule",
        "AuditLog",
        "CallSlots",
        "AuditRecord",
        "ChildRuns",
        "InvalidArguments",
        "MemoryAuditLog",
        "MemoryResultStore",
        "ResultStore",
        "SideEffects",
        "ToolContext",
        "ToolError",
        "ToolOutcome",
        "ToolResult",
        "ToolSpec",
        "ToolStatus",
        "Toolset",
        "Violation",
        "bash_tool",
        "read_result_tool",
        "render_result",
        "tool",
        "truncate",
    }
    for name in harness.tools.__all__:
        assert getattr(harness.tools, name) is not None


def test_importing_the_tools_package_does_not_load_jsonschema() -> None:
    code = "import sys, harness.tools\nprint('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_from_schema_defaults() -> None:
    spec = ToolSpec.from_schema(
        name="search", description="Search.", parameters=SCHEMA, function=search
    )
    assert spec.side_effects == "mutating"
    assert spec.approval == "auto"
    assert spec.timeout is None
    assert spec.max_result_chars is None
    assert spec.coerce is None
    assert spec.required == ("q",)


def test_from_schema_copies_the_schema() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    spec = ToolSpec.from_schema(name="s", description="S.", parameters=schema, function=search)
    schema["properties"]["q"]["type"] = "integer"
    assert spec.parameters["properties"]["q"]["type"] == "string"


def test_definition_is_what_the_model_sees_and_is_a_copy() -> None:
    spec = ToolSpec.from_schema(
        name="search", description="Search.", parameters=SCHEMA, function=search
    )
    definition = spec.definition()
    assert definition == ToolDefinition(name="search", description="Search.", parameters=SCHEMA)
    definition.parameters["required"].append("x")
    assert spec.parameters["required"] == ["q"]


def test_required_tolerates_odd_schemas() -> None:
    spec = ToolSpec.from_schema(
        name="s", description="S.", function=search, parameters={"type": "object", "required": "q"}
    )
    assert spec.required == ()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": ""}, "invalid"),
        ({"name": "a" * 65}, "invalid"),
        ({"name": "bad.name"}, "invalid"),
        ({"description": "  "}, "needs a description"),
        ({"parameters": {"type": "array"}}, '"type": "object"'),
        ({"parameters": {}}, '"type": "object"'),
        ({"timeout": 0}, "timeout must be > 0"),
        ({"timeout": float("nan")}, "timeout must be > 0"),
        ({"max_result_chars": 0}, "max_result_chars must be > 0"),
    ],
)
def test_invalid_specs_are_refused(changes: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {
        "name": "ok_name-1",
        "description": "Fine.",
        "parameters": {"type": "object"},
        "function": search,
    }
    with pytest.raises(ToolDefinitionError, match=message):
        ToolSpec.from_schema(**(fields | changes))  # type: ignore[arg-type]
