"""Type hints and docstrings to JSON Schema, via the `@tool` decorator."""

import dataclasses
import enum
from typing import Annotated, Any, Literal, Optional

import pytest
from jsonschema import Draft202012Validator  # noqa: TID251 - tests check schemas with it
from pydantic import BaseModel, Field

from harness.errors import ToolDefinitionError
from harness.tools import InvalidArguments, ToolSpec, tool
from harness.tools.schema import function_schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    label: str
    sizes: list[int] = dataclasses.field(default_factory=list)


class Tree(BaseModel):
    value: int
    children: list["Tree"] = []


def props(spec: ToolSpec) -> dict[str, Any]:
    return spec.parameters["properties"]


def walk(node: object) -> list[dict[str, Any]]:
    """Every dict nested in `node`, `node` included."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(walk(value))
    return found


def test_scalars_and_defaults() -> None:
    @tool
    def f(text: str, count: int, ratio: float, flag: bool, maybe: int | None = None) -> str:
        """Do f."""
        return text

    assert f.name == "f"
    assert f.description == "Do f."
    assert f.parameters["type"] == "object"
    assert f.parameters["additionalProperties"] is False
    assert f.parameters["required"] == ["text", "count", "ratio", "flag"]
    assert props(f)["text"] == {"type": "string"}
    assert props(f)["count"] == {"type": "integer"}
    assert props(f)["ratio"] == {"type": "number"}
    assert props(f)["flag"] == {"type": "boolean"}
    assert props(f)["maybe"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}],
        "default": None,
    }


def test_optional_without_default_is_required() -> None:
    @tool
    def f(value: Optional[str]) -> None:  # noqa: UP045 - the old spelling must work too
        """Do f."""

    assert f.parameters["required"] == ["value"]
    assert props(f)["value"]["anyOf"] == [{"type": "string"}, {"type": "null"}]


def test_containers() -> None:
    @tool
    def f(
        names: list[str], scores: dict[str, float], pair: tuple[int, str], rest: tuple[int, ...]
    ) -> None:
        """Do f."""

    assert props(f)["names"] == {"type": "array", "items": {"type": "string"}}
    assert props(f)["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props(f)["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props(f)["pair"]["minItems"] == props(f)["pair"]["maxItems"] == 2
    assert props(f)["rest"] == {"type": "array", "items": {"type": "integer"}}


def test_literal_and_enum() -> None:
    @tool
    def f(mode: Literal["fast", "slow"], color: Color = Color.RED) -> None:
        """Do f."""

    assert props(f)["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props(f)["color"]["enum"] == ["red", "blue"]
    assert props(f)["color"]["default"] == "red"


def test_model_and_dataclass_parameters_are_inlined_and_closed() -> None:
    @tool
    def f(point: Point, box: Box) -> None:
        """Do f."""

    assert "$defs" not in f.parameters
    assert props(f)["point"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert props(f)["box"]["required"] == ["label"]
    assert props(f)["box"]["additionalProperties"] is False


def test_recursive_model_keeps_its_definitions() -> None:
    @tool
    def f(tree: Tree) -> None:
        """Do f."""

    assert props(f)["tree"] == {"$ref": "#/$defs/Tree"}
    assert "Tree" in f.parameters["$defs"]
    Draft202012Validator(f.parameters).validate({"tree": {"value": 1, "children": [{"value": 2}]}})


def test_no_title_noise_anywhere_but_a_property_called_title_survives() -> None:
    class Doc(BaseModel):
        title: str

    @tool
    def f(title: str, doc: Doc) -> None:
        """Do f."""

    assert "title" in props(f)
    assert "title" in props(f)["doc"]["properties"]
    assert not [node for node in walk(f.parameters) if isinstance(node.get("title"), str)]


def test_every_generated_schema_is_valid_draft_2020_12() -> None:
    @tool
    def f(
        a: str, b: list[Point], c: dict[str, Box], d: Literal[1, 2] = 1, t: Tree | None = None
    ) -> None:
        """Do f."""

    Draft202012Validator.check_schema(f.parameters)


def test_parameter_descriptions_from_annotated_field_and_docstring() -> None:
    @tool
    def f(
        a: Annotated[str, "From Annotated."],
        b: Annotated[int, Field(description="From Field.")],
        c: int = Field(3, description="From a Field default."),
        d: str = "",
        e: str = "",
    ) -> None:
        """Summary line.

        Body paragraph that stays.

        Args:
            a: Docstring loses to Annotated.
            b: Docstring loses to Field.
            d: From the docstring,
                over two lines.
            e (str): With a type in brackets.

        Returns:
            Nothing much.

        Raises:
            ToolError: When sad.
        """

    assert props(f)["a"]["description"] == "From Annotated."
    assert props(f)["b"]["description"] == "From Field."
    assert props(f)["c"] == {
        "type": "integer",
        "default": 3,
        "description": "From a Field default.",
    }
    assert props(f)["d"]["description"] == "From the docstring, over two lines."
    assert props(f)["e"]["description"] == "With a type in brackets."
    assert f.description == (
        "Summary line.\n\nBody paragraph that stays.\n\nReturns:\n    Nothing much."
    )
    assert "Args" not in f.description
    assert "ToolError" not in f.description


def test_field_constraints_reach_the_schema() -> None:
    @tool
    def f(n: Annotated[int, Field(ge=1, le=10)], name: Annotated[str, Field(min_length=2)]) -> None:
        """Do f."""

    assert props(f)["n"] == {"type": "integer", "minimum": 1, "maximum": 10}
    assert props(f)["name"] == {"type": "string", "minLength": 2}


def test_names_that_pydantic_reserves_are_fine() -> None:
    @tool
    def f(schema: str, json: int, model_name: str, _private: bool = False) -> None:
        """Do f."""

    assert set(props(f)) == {"schema", "json", "model_name", "_private"}
    kwargs = f.coerce({"schema": "s", "json": 1, "model_name": "m"}) if f.coerce else {}
    assert kwargs == {"schema": "s", "json": 1, "model_name": "m", "_private": False}


def test_options_are_passed_to_the_spec() -> None:
    @tool(name="renamed", side_effects="none", timeout=2.5, approval="ask", max_result_chars=99)
    async def f() -> None:
        """Do f."""

    assert (f.name, f.side_effects, f.timeout, f.approval, f.max_result_chars) == (
        "renamed",
        "none",
        2.5,
        "ask",
        99,
    )
    assert f.parameters == {"type": "object", "properties": {}, "additionalProperties": False}


def test_description_option_replaces_a_missing_docstring() -> None:
    def f(x: int) -> int:
        return x

    assert tool(description="Given.")(f).description == "Given."


def test_default_side_effects_are_mutating() -> None:
    @tool
    def f() -> None:
        """Do f."""

    assert (f.side_effects, f.approval, f.timeout, f.max_result_chars) == (
        "mutating",
        "auto",
        None,
        None,
    )


def test_coerce_builds_the_annotated_python_values() -> None:
    @tool
    def f(point: Point, box: Box, color: Color, pair: tuple[int, str], ratio: float) -> None:
        """Do f."""

    assert f.coerce is not None
    kwargs = f.coerce(
        {
            "point": {"x": 1},
            "box": {"label": "b"},
            "color": "blue",
            "pair": [1, "a"],
            "ratio": 2,
        }
    )
    assert kwargs == {
        "point": Point(x=1, y=0),
        "box": Box(label="b"),
        "color": Color.BLUE,
        "pair": (1, "a"),
        "ratio": 2.0,
    }
    assert isinstance(kwargs["ratio"], float)


def test_coerce_reports_what_only_pydantic_checks() -> None:
    class Even(BaseModel):
        n: int

        def model_post_init(self, context: Any) -> None:
            if self.n % 2:
                raise ValueError("n must be even")

    @tool
    def f(value: Even) -> None:
        """Do f."""

    assert f.coerce is not None
    with pytest.raises(InvalidArguments) as caught:
        f.coerce({"value": {"n": 3}})
    assert caught.value.violations[0].path == "$.value"
    assert "even" in caught.value.violations[0].message


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(x):\n    'Doc.'", "parameter 'x' has no type annotation"),
        ("def f(*args: int):\n    'Doc.'", "*args and **kwargs"),
        ("def f(**kw: int):\n    'Doc.'", "*args and **kwargs"),
        ("def f(x: int, /):\n    'Doc.'", "positional-only"),
        ("def f(x: int):\n    pass", "has no docstring"),
        ("def f(x: 'Missing'):\n    'Doc.'", "could not be resolved"),
    ],
)
def test_definition_errors_name_the_function_and_the_problem(source: str, expected: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(ToolDefinitionError) as caught:
        tool(namespace["f"])
    assert "'f'" in str(caught.value)
    assert expected in str(caught.value)


class Opaque:
    pass


def test_unsupported_type_names_the_parameter() -> None:
    def f(fine: int, handle: Opaque) -> None:
        """Do f."""

    with pytest.raises(ToolDefinitionError) as caught:
        tool(f)
    message = str(caught.value)
    assert "'handle'" in message
    assert "test_unsupported_type_names_the_parameter.<locals>.f" in message
    assert "pydantic models" in message


def test_type_without_a_json_schema_names_the_parameter() -> None:
    from collections.abc import Callable

    def f(callback: Callable[[int], int]) -> None:
        """Do f."""

    with pytest.raises(ToolDefinitionError, match="'callback'"):
        tool(f)


def test_default_that_is_not_json_is_left_out_of_the_schema() -> None:
    marker = Opaque()

    def f(value: Any = marker) -> None:
        """Do f."""

    spec = tool(f)
    assert "default" not in props(spec)["value"]
    assert spec.coerce is not None
    assert spec.coerce({})["value"] is marker


def test_function_schema_without_descriptions() -> None:
    def f(a: int, b: str = "x") -> None: ...

    schema = function_schema(f)
    assert schema.parameters["required"] == ["a"]
    assert schema.coerce({"a": 1}) == {"a": 1, "b": "x"}


def test_invalid_tool_name_is_refused() -> None:
    def bad_name() -> None:
        """Do it."""

    with pytest.raises(ToolDefinitionError, match="invalid"):
        tool(name="has space")(bad_name)


def test_the_name_of_unreadable_calls_is_reserved() -> None:
    def malformed_tool_call() -> None:
        """Pretend to be the harness's answer to an unreadable call."""

    with pytest.raises(ToolDefinitionError, match="reserved"):
        tool()(malformed_tool_call)
