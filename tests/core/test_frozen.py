"""`fast_init`: a frozen dataclass built by storing its slots, and nothing else changes."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import InitVar, dataclass, field

import pytest

from harness.core._frozen import builder, fast_init, set_class, twin
from harness.core.events import ModelResponded, RunEvent, StepStarted, new_event
from harness.core.messages import Message, ToolCall
from harness.core.usage import Usage


@dataclass(frozen=True, kw_only=True, slots=True)
class _Plain:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=lambda: [1])
    d: int = field(default=4, init=False)
    e: tuple[int, ...] = field(default_factory=tuple, init=False)


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class _Fast:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=lambda: [1])
    d: int = field(default=4, init=False)
    e: tuple[int, ...] = field(default_factory=tuple, init=False)


@fast_init
@dataclass(frozen=True, slots=True)
class _Mixed:
    x: int
    y: int = 2
    z: int = field(default=3, kw_only=True)


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class _Checked:
    n: int
    seen: list[str] = field(default_factory=lambda: [])

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("negative")
        self.seen.append("post")


def test_the_same_fields_defaults_and_factories_as_the_dataclass() -> None:
    assert inspect.signature(_Fast) == inspect.signature(_Plain)
    for kwargs in ({"a": 1}, {"a": 1, "b": "x", "c": [7]}):
        plain, fast = _Plain(**kwargs), _Fast(**kwargs)
        assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
    assert inspect.signature(_Fast) == inspect.signature(_Plain)  # once written too
    first, second = _Fast(a=1), _Fast(a=1)
    assert first.c == [1]
    assert first.c is not second.c


def test_an_instance_stays_frozen_and_of_its_class() -> None:
    fast = _Fast(a=1)
    assert type(fast) is _Fast
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.a = 2  # type: ignore[misc]
    assert fast == _Fast(a=1)
    assert hash(_Mixed(1)) == hash(_Mixed(1))
    assert dataclasses.replace(fast, b="z").b == "z"
    assert pickle.loads(pickle.dumps(fast)) == fast


def test_positional_and_keyword_only_fields() -> None:
    assert dataclasses.astuple(_Mixed(1)) == (1, 2, 3)
    assert dataclasses.astuple(_Mixed(1, 5, z=6)) == (1, 5, 6)
    with pytest.raises(TypeError):
        _Mixed(1, 2, 3)  # type: ignore[misc]
    with pytest.raises(TypeError):
        _Fast(1)  # type: ignore[misc]
    with pytest.raises(TypeError):
        _Fast()  # type: ignore[call-arg]


def test_post_init_runs_and_its_error_propagates() -> None:
    assert _Checked(n=1).seen == ["post"]
    with pytest.raises(ValueError, match="negative"):
        _Checked(n=-1)


def test_a_subclass_is_built_by_the_dataclass_init() -> None:
    class Sub(_Fast):
        __slots__ = ("extra",)

    sub = Sub(a=3)
    assert type(sub) is Sub
    assert sub.a == 3
    assert sub.c == [1]
    assert sub.d == 4


def test_the_library_classes_build_as_before() -> None:
    message = Message(role="tool", content="5", tool_call_id="c", name="add")
    assert message == Message.tool("c", "5", name="add")
    assert type(message) is Message
    usage = Usage(input_tokens=3, requests=1)
    assert (usage + usage).input_tokens == 6
    event = RunEvent(run_id="r", seq=1, ts=0.0, payload=StepStarted(step=1))
    assert event.type == "step_started"
    assert "usage" in inspect.signature(ModelResponded).parameters


def test_refuses_what_it_cannot_build() -> None:
    @dataclass(kw_only=True, slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True, kw_only=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        a: int
        b: InitVar[int]

    for cls in (Mutable, NoSlots, WithInitVar):
        with pytest.raises(TypeError):
            fast_init(cls)


def test_a_twin_shares_the_layout() -> None:
    fast = _Fast(a=1)
    set_class(fast, twin(_Fast))
    fast.a = 9  # type: ignore[misc]
    set_class(fast, _Fast)
    assert fast.a == 9
    assert type(fast) is _Fast


def test_the_builders_of_messages_usage_and_events_build_frozen_equals() -> None:
    call = ToolCall(id="c", name="add", arguments="{}")
    built = [
        (Message.system("s"), Message(role="system", content="s")),
        (Message.user("u"), Message(role="user", content="u")),
        (Message.assistant(None, [call]), Message(role="assistant", tool_calls=(call,))),
        (
            Message.tool("c", "5", name="add"),
            Message(role="tool", content="5", tool_call_id="c", name="add"),
        ),
        (
            Message.user("u").with_tokens(3, "estimated"),
            Message(role="user", content="u", tokens=3, tokens_source="estimated"),
        ),
        (
            Usage(input_tokens=1) + Usage(requests=2, cost_usd=0.5),
            Usage(input_tokens=1, requests=2, cost_usd=0.5),
        ),
        (Usage(requests=1).with_tool_calls(2), Usage(requests=1, tool_calls=2)),
        (
            new_event("r", 2, 1.5, StepStarted(step=1)),
            RunEvent(run_id="r", seq=2, ts=1.5, payload=StepStarted(step=1)),
        ),
    ]
    for fast, plain in built:
        assert type(fast) is type(plain)
        assert fast == plain
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(fast, dataclasses.fields(fast)[0].name, None)


def test_a_builder_takes_the_arguments_of_its_class_and_builds_the_same() -> None:
    fast, plain, mixed = builder(_Fast), builder(_Plain), builder(_Mixed)
    fast(a=0), mixed(0)  # the code of a builder is written at its first call
    for build, cls in ((fast, _Fast), (mixed, _Mixed)):
        built = inspect.signature(build).parameters.values()
        called = inspect.signature(cls).parameters.values()
        assert [(p.name, p.kind) for p in built] == [(p.name, p.kind) for p in called]
    for kwargs in ({"a": 1}, {"a": 1, "b": "x", "c": [7]}):
        for build, cls in ((fast, _Fast), (plain, _Plain)):
            made = build(**kwargs)
            assert type(made) is cls
            assert dataclasses.astuple(made) == dataclasses.astuple(cls(**kwargs))
    assert fast(a=1).c is not fast(a=1).c  # each gets its own factory's value
    assert mixed(1) == _Mixed(1)
    assert mixed(1, 5, z=6) == _Mixed(1, 5, z=6)
    with pytest.raises(TypeError):
        mixed(1, 2, 3)  # type: ignore[misc]
    with pytest.raises(TypeError):
        fast()  # type: ignore[call-arg]


def test_what_a_builder_makes_is_frozen_checked_and_of_its_class() -> None:
    build = builder(_Checked)
    made = build(n=1)
    assert type(made) is _Checked
    assert made.seen == ["post"]
    with pytest.raises(ValueError, match="negative"):
        build(n=-1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.n = 2  # type: ignore[misc]
    assert hash(builder(_Mixed)(1)) == hash(_Mixed(1))
    assert pickle.loads(pickle.dumps(made)) == made
    call = builder(StepStarted)(step=3, wrap_up=True, reason="max_steps")
    assert call == StepStarted(step=3, wrap_up=True, reason="max_steps")


def test_a_builder_refuses_what_it_cannot_build() -> None:
    @dataclass(frozen=True, kw_only=True)
    class NoSlots:
        a: int

    @dataclass(kw_only=True, slots=True)
    class Mutable:
        a: int

    for cls in (Mutable, NoSlots):
        with pytest.raises(TypeError):
            builder(cls)
