"""`Toolset.execute`: every way a call can go, and what the model is told."""

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from harness.core import Limits, Message, ToolCall
from harness.errors import ApprovalRequired, ToolDefinitionError, ToolError
from harness.tools import InvalidArguments, ToolOutcome, Toolset, ToolSpec, Violation, tool

Call = Callable[..., ToolCall]


class Point(BaseModel):
    x: int
    y: int = 0


@tool(side_effects="none")
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@tool
async def move(point: Point, steps: int = 1) -> Point:
    """Move a point right."""
    await asyncio.sleep(0)
    return Point(x=point.x + steps, y=point.y)


@tool
def noop() -> None:
    """Do nothing."""


@tool
def refuse(path: str) -> str:
    """Always refuses."""
    raise ToolError(f"{path} is outside the workspace", hint="Use a path under ./src.")


@tool
def explode(value: int) -> str:
    """Always crashes."""
    raise KeyError(f"no such key {value}")


@tool
def shout(text: str, times: int = 1) -> str:
    """Repeat text."""
    return text * times


@pytest.fixture
def toolset() -> Toolset:
    return Toolset([add, move, noop, refuse, explode, shout])


async def run(toolset: Toolset, call: ToolCall, limits: Limits) -> ToolOutcome:
    outcome = await toolset.execute(call, limits=limits)
    assert outcome.call is call
    assert outcome.message.role == "tool"
    assert outcome.message.tool_call_id == call.id
    assert outcome.message.name == call.name
    assert outcome.duration_s >= 0
    return outcome


def text(outcome: ToolOutcome) -> str:
    assert outcome.message.content is not None
    return outcome.message.content


async def test_sync_tool(toolset: Toolset, call: Call, limits: Limits) -> None:
    outcome = await run(toolset, call("add", {"a": 2, "b": 3}), limits)
    assert outcome.ok
    assert outcome.status == "ok"
    assert text(outcome) == outcome.output == "5"
    assert not outcome.truncated


async def test_async_tool_gets_a_model_instance_and_returns_json(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("move", {"point": {"x": 1, "y": 2}, "steps": 3}), limits)
    assert outcome.status == "ok"
    assert text(outcome) == '{"x": 4, "y": 2}'


async def test_none_result_reads_no_output(toolset: Toolset, call: Call, limits: Limits) -> None:
    outcome = await run(toolset, call("noop", "{}"), limits)
    assert text(outcome) == "(no output)"


@pytest.mark.parametrize("arguments", ["", "   ", "null", "{}"])
async def test_no_arguments_mean_an_empty_object(
    toolset: Toolset, call: Call, limits: Limits, arguments: str
) -> None:
    outcome = await run(toolset, call("noop", arguments), limits)
    assert outcome.status == "ok"


async def test_empty_arguments_for_required_parameters_name_them(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("add", ""), limits)
    assert outcome.status == "invalid_arguments"
    assert "'a' is a required property" in text(outcome)


async def test_unknown_tool_lists_the_available_ones(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("ad", "{}"), limits)
    assert outcome.status == "unknown_tool"
    assert not outcome.ok
    assert text(outcome).startswith("Unknown tool 'ad'. Did you mean 'add'?")
    assert "Available tools: add, move, noop, refuse, explode, shout." in text(outcome)
    assert "exact name" in text(outcome)


async def test_unknown_tool_in_an_empty_toolset(call: Call, limits: Limits) -> None:
    outcome = await run(Toolset(), call("anything"), limits)
    assert outcome.status == "unknown_tool"
    assert "No tools are available" in text(outcome)


async def test_unknown_tool_with_a_hostile_name_stays_short(call: Call, limits: Limits) -> None:
    outcome = await run(Toolset([add]), call("x\n" * 10_000), limits)
    assert outcome.status == "unknown_tool"
    assert len(text(outcome)) < 400
    assert "\n" not in text(outcome)


async def test_invalid_json_shows_where_and_asks_for_an_object(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("add", '{"a": 1, "b": }'), limits)
    assert outcome.status == "invalid_json"
    message = text(outcome)
    assert "were not valid JSON" in message
    assert "line 1, column 15" in message
    assert '`{"a": 1, "b": ⟦HERE⟧}`' in message
    assert "single JSON object" in message
    assert "a (integer, required), b (integer, optional)" in message


async def test_invalid_json_excerpt_is_short_and_on_one_line(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    arguments = '{"text": "' + "y\n" * 5000 + '", oops}'
    outcome = await run(toolset, call("shout", arguments), limits)
    assert outcome.status == "invalid_json"
    excerpt = text(outcome).split("here: ")[1].split("`")[1]
    assert "\n" not in excerpt
    assert len(excerpt) < 200


@pytest.mark.parametrize("arguments", ["NaN", '{"a": NaN}', '{"a": Infinity}', '{"a": 1e999}'])
async def test_what_python_json_accepts_but_json_does_not(
    toolset: Toolset, call: Call, limits: Limits, arguments: str
) -> None:
    outcome = await run(toolset, call("add", arguments), limits)
    assert outcome.status == "invalid_json"


async def test_nesting_past_the_bound_is_refused_before_parsing(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("add", "[" * 100_000), limits)
    assert outcome.status == "invalid_arguments"
    assert "nested 100,000 levels deep, more than the 64 levels" in text(outcome)
    assert toolset.check(call("add", "[" * 100_000), limits=limits) is not None


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ("[1, 2]", "an array"),
        ("3", "a number"),
        ('"a"', "a string"),
        ("true", "a boolean"),
        ('"{\\"a\\": 1}"', "encoded twice"),
    ],
)
async def test_arguments_that_are_not_an_object(
    toolset: Toolset, call: Call, limits: Limits, arguments: str, kind: str
) -> None:
    outcome = await run(toolset, call("add", arguments), limits)
    assert outcome.status == "invalid_arguments"
    assert "must be a JSON object" in text(outcome)
    assert kind in text(outcome)
    assert "Parameters of 'add': a (integer, required)" in text(outcome)


async def test_schema_violations_are_listed_with_paths(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("move", {"point": {"x": "1", "z": 0}, "steps": 1.5}), limits)
    assert outcome.status == "invalid_arguments"
    message = text(outcome)
    assert "do not match its parameters" in message
    assert "- $.steps: 1.5 is not of type 'integer'" in message
    assert "- $.point.x: '1' is not of type 'integer'" in message
    assert "- $.point: Additional properties are not allowed ('z' was unexpected)" in message
    assert "point (object, required), steps (integer, optional)" in message
    assert message.endswith("Fix these and call 'move' again.")


async def test_many_violations_are_capped(call: Call, limits: Limits) -> None:
    spec = ToolSpec.from_schema(
        name="nums",
        description="Numbers.",
        function=lambda values: values,
        parameters={
            "type": "object",
            "properties": {"values": {"type": "array", "items": {"type": "integer"}}},
        },
    )
    outcome = await run(Toolset([spec]), call("nums", {"values": ["x"] * 50}), limits)
    assert outcome.status == "invalid_arguments"
    assert "- ... and 42 more" in text(outcome)
    assert text(outcome).count("is not of type 'integer'") == 8


async def test_unexpected_parameter_is_refused(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("add", {"a": 1, "c": 2}), limits)
    assert outcome.status == "invalid_arguments"
    assert "('c' was unexpected)" in text(outcome)


async def test_tool_error_gives_message_and_hint(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("refuse", {"path": "/etc"}), limits)
    assert outcome.status == "tool_error"
    assert text(outcome) == (
        "Tool 'refuse' failed: /etc is outside the workspace\nHint: Use a path under ./src."
    )


async def test_tool_error_without_hint(call: Call, limits: Limits) -> None:
    def fail() -> None:
        raise ToolError("not today")

    spec = ToolSpec.from_schema(
        name="fail", description="Fails.", parameters={"type": "object"}, function=fail
    )
    outcome = await run(Toolset([spec]), call("fail"), limits)
    assert text(outcome) == "Tool 'fail' failed: not today"


async def test_crash_names_the_exception_without_a_traceback(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    outcome = await run(toolset, call("explode", {"value": 7}), limits)
    assert outcome.status == "tool_crash"
    message = text(outcome)
    assert message.startswith("Tool 'explode' crashed: KeyError: 'no such key 7'")
    assert "Do not repeat the same call" in message
    assert "Traceback" not in message
    assert "test_toolset.py" not in message


async def test_exception_that_cannot_be_shown(call: Call, limits: Limits) -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    class Unprintable:
        def __str__(self) -> str:
            raise Broken

    def fail() -> None:
        raise Broken

    def odd() -> Unprintable:
        return Unprintable()

    specs = [
        ToolSpec.from_schema(
            name=f.__name__, description="Fails.", function=f, parameters={"type": "object"}
        )
        for f in (fail, odd)
    ]
    for name in ("fail", "odd"):
        outcome = await run(Toolset(specs), call(name), limits)
        assert outcome.status == "tool_crash"
        assert "Broken: (the error could not be shown)" in text(outcome)


async def test_sys_exit_inside_a_tool_is_a_crash(call: Call, limits: Limits) -> None:
    def leave() -> None:
        raise SystemExit(3)

    spec = ToolSpec.from_schema(
        name="leave", description="Exits.", parameters={"type": "object"}, function=leave
    )
    outcome = await run(Toolset([spec]), call("leave"), limits)
    assert outcome.status == "tool_crash"
    assert "SystemExit: 3" in text(outcome)


async def test_invalid_arguments_raised_by_a_tool(call: Call, limits: Limits) -> None:
    def pick(index: int) -> None:
        raise InvalidArguments(
            [Violation(path="$.index", message="must be below 3")], hint="Pick 0, 1 or 2."
        )

    spec = ToolSpec.from_schema(
        name="pick",
        description="Pick.",
        function=pick,
        parameters={"type": "object", "properties": {"index": {"type": "integer"}}},
    )
    outcome = await run(Toolset([spec]), call("pick", {"index": 5}), limits)
    assert outcome.status == "invalid_arguments"
    assert "- $.index: must be below 3" in text(outcome)
    assert text(outcome).endswith("Pick 0, 1 or 2.")


async def test_conversion_failure_is_invalid_arguments(call: Call, limits: Limits) -> None:
    class Odd(BaseModel):
        n: int

        def model_post_init(self, context: Any) -> None:
            if self.n % 2 == 0:
                raise ValueError("n must be odd")

    @tool
    def use(value: Odd) -> int:
        """Use an odd number."""
        return value.n

    outcome = await run(Toolset([use]), call("use", {"value": {"n": 2}}), limits)
    assert outcome.status == "invalid_arguments"
    assert "$.value" in text(outcome)
    assert "n must be odd" in text(outcome)


async def test_approval_required_is_a_signal_for_the_loop(call: Call, limits: Limits) -> None:
    def ask() -> None:
        raise ApprovalRequired("needs a human")

    spec = ToolSpec.from_schema(
        name="ask", description="Asks.", parameters={"type": "object"}, function=ask
    )
    with pytest.raises(ApprovalRequired):
        await Toolset([spec]).execute(call("ask"), limits=limits)


async def test_async_tool_timeout_cancels_it(call: Call) -> None:
    cancelled = asyncio.Event()

    @tool(timeout=0.2)
    async def slow() -> None:
        """Sleeps."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = time.monotonic()
    outcome = await run(Toolset([slow]), call("slow"), Limits())
    assert time.monotonic() - started < 5
    assert outcome.status == "tool_timeout"
    assert cancelled.is_set()
    assert text(outcome).startswith("Tool 'slow' was stopped after 0.2 s")
    assert "smaller or faster step" in text(outcome)


async def test_an_async_tools_deadline_counts_its_first_step(call: Call) -> None:
    # The first step runs before any timer exists; its time still counts against the limit.
    @tool(timeout=0.2)
    async def busy_then_waits() -> str:
        """Works, then waits."""
        time.sleep(0.3)
        await asyncio.sleep(0.05)
        return "done"

    outcome = await run(Toolset([busy_then_waits]), call("busy_then_waits"), Limits())
    assert outcome.status == "tool_timeout"


async def test_an_async_tool_that_waits_gets_what_it_awaited(call: Call) -> None:
    @tool
    async def waits(n: int) -> int:
        """Waits twice, then answers."""
        await asyncio.sleep(0)
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, n)
        return await future + 1

    outcome = await run(Toolset([waits]), call("waits", {"n": 41}), Limits())
    assert (outcome.status, text(outcome)) == ("ok", "42")


async def test_sync_tool_timeout_returns_while_the_thread_lingers(call: Call) -> None:
    release = threading.Event()

    @tool
    def stuck() -> str:
        """Blocks."""
        release.wait(30)
        return "late"

    try:
        started = time.monotonic()
        outcome = await run(Toolset([stuck]), call("stuck"), Limits(tool_timeout=0.2))
        assert time.monotonic() - started < 5
        assert outcome.status == "tool_timeout"
        assert "stopped after 0.2 s" in text(outcome)
    finally:
        release.set()


async def test_limits_tool_timeout_cuts_a_tools_own_longer_timeout(call: Call) -> None:
    @tool(timeout=20)
    async def waits() -> str:
        """Waits for nothing."""
        await asyncio.Event().wait()
        return "never"

    outcome = await run(Toolset([waits]), call("waits"), Limits(tool_timeout=0.2))
    assert outcome.status == "tool_timeout"
    assert "stopped after 0.2 s" in text(outcome)


@pytest.mark.parametrize(
    ("own", "limit", "seconds"),
    [
        (None, None, 30.0),
        (None, 5.0, 5.0),
        (120.0, None, 120.0),
        (120.0, 3.0, 3.0),
        (2.0, 3.0, 2.0),
    ],
)
def test_which_timeout_applies(own: float | None, limit: float | None, seconds: float) -> None:
    assert Limits(tool_timeout=limit).tool_seconds(own) == seconds


async def test_a_tools_own_timeout_error_is_a_crash(call: Call, limits: Limits) -> None:
    async def connect() -> None:
        raise TimeoutError("upstream took too long")

    spec = ToolSpec.from_schema(
        name="connect", description="Connects.", parameters={"type": "object"}, function=connect
    )
    outcome = await run(Toolset([spec]), call("connect"), limits)
    assert outcome.status == "tool_crash"
    assert "TimeoutError: upstream took too long" in text(outcome)


async def test_cancelling_execute_propagates(call: Call, limits: Limits) -> None:
    started = asyncio.Event()

    @tool
    async def wait() -> None:
        """Waits."""
        started.set()
        await asyncio.sleep(30)

    task = asyncio.ensure_future(Toolset([wait]).execute(call("wait"), limits=limits))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_long_result_is_truncated_for_the_model_but_kept_in_full(
    toolset: Toolset, call: Call
) -> None:
    outcome = await run(
        toolset, call("shout", {"text": "abcdefghij", "times": 1000}), Limits(max_result_chars=300)
    )
    assert outcome.truncated
    assert len(outcome.output) == 10_000
    assert len(text(outcome)) <= 300
    assert "characters cut ...]" in text(outcome)


async def test_spec_result_limit_beats_the_run_limit(call: Call) -> None:
    @tool(max_result_chars=50)
    def long() -> str:
        """Long."""
        return "z" * 1000

    outcome = await run(Toolset([long]), call("long"), Limits(max_result_chars=10_000))
    assert len(text(outcome)) <= 50
    assert outcome.truncated


async def test_parallel_calls_keep_order_and_ids(
    toolset: Toolset, call: Call, limits: Limits
) -> None:
    calls = [
        call("add", {"a": i, "b": 1}) if i % 3 else call("move", {"point": {"x": i}})
        for i in range(30)
    ]
    calls.append(call("missing"))
    outcomes = await asyncio.gather(*(toolset.execute(c, limits=limits) for c in calls))
    assert [o.call.id for o in outcomes] == [c.id for c in calls]
    assert [o.message.tool_call_id for o in outcomes] == [c.id for c in calls]
    assert text(outcomes[1]) == "2"
    assert text(outcomes[3]) == '{"x": 4, "y": 0}'
    assert outcomes[-1].status == "unknown_tool"


async def test_callable_object_with_async_call(call: Call, limits: Limits) -> None:
    class Greeter:
        async def __call__(self, name: str) -> str:
            return f"hello {name}"

    spec = ToolSpec.from_schema(
        name="greet",
        description="Greets.",
        function=Greeter(),
        parameters={"type": "object", "properties": {"name": {"type": "string"}}},
    )
    outcome = await run(Toolset([spec]), call("greet", {"name": "ada"}), limits)
    assert text(outcome) == "hello ada"


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="Two tools are named 'add'"):
        Toolset([add, add])


def test_invalid_schema_is_refused() -> None:
    spec = ToolSpec.from_schema(
        name="bad",
        description="Bad.",
        function=lambda: None,
        parameters={"type": "object", "properties": {"a": {"type": 5}}},
    )
    with pytest.raises(ToolDefinitionError, match=r"'bad': invalid JSON Schema at \$"):
        Toolset([spec])


def test_definitions_lookup_and_iteration(toolset: Toolset) -> None:
    names = ("add", "move", "noop", "refuse", "explode", "shout")
    assert tuple(d.name for d in toolset.definitions()) == names
    assert toolset.names == names
    assert len(toolset) == 6
    assert "add" in toolset
    assert "nope" not in toolset
    assert toolset.get("add") is add
    assert toolset.get("nope") is None
    assert [spec.name for spec in toolset] == list(names)
    assert toolset.definitions()[0].parameters == add.parameters


async def test_duration_uses_the_given_clock(call: Call, limits: Limits) -> None:
    class Ticking:
        def __init__(self) -> None:
            self.t = 100.0

        def now(self) -> float:
            return self.t

        def monotonic(self) -> float:
            self.t += 1.5
            return self.t

    outcome = await Toolset([add], clock=Ticking()).execute(call("add", {"a": 1}), limits=limits)
    assert outcome.duration_s == 1.5


def test_outcome_message_is_a_plain_tool_message() -> None:
    message = Message.tool("id1", "5", name="add")
    outcome = ToolOutcome(
        call=ToolCall(id="id1", name="add", arguments="{}"),
        message=message,
        status="ok",
        output="5",
        truncated=False,
        duration_s=0.0,
    )
    assert outcome.ok
