"""Messages between runs: the inbox, `send_message`, `wait_for_message`, and parking.

A parked run (`ToolContext.park`) holds no worker slot: with `max_concurrent=1` another run
executes while it waits. Messages are delivered once, at the next step boundary or into a
waiting `wait_for_message`, also across processes and a SIGKILL of the run's owner.
"""

import asyncio
import sys
from pathlib import Path

import pytest

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.agent.loop import AgentLoop
from harness.cli.render import LiveRenderer
from harness.core.events import (
    MessageReceived,
    MessageSent,
    RunEvent,
    RunWaiting,
    WaitEnded,
    payloads,
)
from harness.errors import ConfigError, RunError
from harness.observability.spans import TraceBuilder
from harness.runtime import EventBus, RunRecorder, Settings
from harness.testing import FunctionModel, ScriptedModel, call, reply
from harness.tools import ToolContext, Toolset
from harness.tools.builtin import builtin_tool
from harness.tools.context import MAX_MESSAGE_CHARS

sys.path.insert(0, str(Path(__file__).parent / "processes"))
from kill_agents import listener
from owner_process import OwnerProcess


async def state_of(h: Harness, run_id: str, *states: str) -> None:
    async with asyncio.timeout(30):
        while (await h.get(run_id)).state not in states:
            await asyncio.sleep(0.02)


async def events_of(h: Harness, run_id: str) -> list[RunEvent]:
    return await h.store.events(run_id)


def _results(request: ModelRequest) -> list[Message]:
    return [m for m in request.messages if m.role == "tool"]


def _user_texts(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "user"]


async def test_a_message_joins_the_conversation_at_the_next_step(tmp_path: Path) -> None:
    gate = asyncio.Event()

    @tool(side_effects="none")
    async def work() -> str:
        """Work until the test lets it finish."""
        await gate.wait()
        return "worked"

    seen: list[list[str]] = []

    def model(request: ModelRequest) -> Message:
        seen.append(_user_texts(request))
        if not _results(request):
            return reply(None, call("work", {}, id="w1"))
        return reply("done")

    agent = Agent(name="worker", model=FunctionModel(model), tools=[work])
    async with Harness(Settings(home=tmp_path), control_poll_s=0.02) as h:
        run_id = await h.submit(agent, "do it")
        async with asyncio.timeout(10):
            while not seen:
                await asyncio.sleep(0.01)
        message_id = await h.send(run_id, "also check the tests", sender="alice")
        await asyncio.sleep(0.2)  # the control reaches the run while its tool still works
        gate.set()
        result = await h.wait(run_id, timeout=10)
        events = await events_of(h, run_id)
        inbox = await h.store.inbox(run_id, unread=False)
    assert seen[0] == ["do it"]
    assert seen[1] == ["do it", "[message from alice]: also check the tests"]
    assert result.output == "done"
    (received,) = payloads(events, MessageReceived)
    assert (received.message_id, received.sender, received.call_id) == (message_id, "alice", None)
    assert [m.id for m in inbox] == [message_id]
    assert inbox[0].delivered_at is not None
    users = [m.content for m in result.messages if m.role == "user"]
    assert users.count("[message from alice]: also check the tests") == 1


def _waits(timeout_s: float):
    def model(request: ModelRequest) -> Message:
        results = _results(request)
        if not results:
            return reply(None, call("wait_for_message", {"timeout_s": timeout_s}, id="w1"))
        return reply(f"heard: {results[-1].content}")

    return model


async def test_a_parked_run_lets_another_run_take_its_slot(tmp_path: Path) -> None:
    waiter = Agent(name="waiter", model=FunctionModel(_waits(60)), tools=["wait_for_message"])
    quick = Agent(name="quick", model=ScriptedModel([reply("quick answer")]))
    async with Harness(
        Settings(home=tmp_path), agents=(waiter, quick), max_concurrent=1, control_poll_s=0.02
    ) as h:
        waiting = await h.submit(waiter, "wait")
        await state_of(h, waiting, "WAITING_TOOL")
        other = await h.submit(quick, "answer")
        # Only one slot, and the waiting run holds none: the other run finishes meanwhile.
        assert (await h.wait(other, timeout=10)).output == "quick answer"
        assert (await h.get(waiting)).state == "WAITING_TOOL"
        await h.send(waiting, "wake up")
        result = await h.wait(waiting, timeout=10)
        events = await events_of(h, waiting)
    assert result.output == "heard: [message from user]: wake up"
    (waited,) = payloads(events, RunWaiting)
    assert (waited.reason, waited.call_id) == ("message", "w1")
    (ended,) = payloads(events, WaitEnded)
    assert (ended.call_id, ended.waiting) == ("w1", 0)
    (received,) = payloads(events, MessageReceived)
    assert received.call_id == "w1"


async def test_a_parked_runs_row_says_what_it_waits_for_until_it_goes_on(tmp_path: Path) -> None:
    waiter = Agent(name="waiter", model=FunctionModel(_waits(60)), tools=["wait_for_message"])
    async with Harness(Settings(home=tmp_path), control_poll_s=0.02) as h:
        waiting = await h.submit(waiter, "wait")
        await state_of(h, waiting, "WAITING_TOOL")
        parked = await h.get(waiting)
        await h.send(waiting, "go on")
        await h.wait(waiting, timeout=10)
        ended = await h.get(waiting)
        cancelled_id = await h.submit(waiter, "wait again")
        await state_of(h, cancelled_id, "WAITING_TOOL")
        await h.cancel(cancelled_id)
        await state_of(h, cancelled_id, "CANCELLED")
        cancelled = await h.get(cancelled_id)
    assert (parked.result_data or {}).get("detail") == "waiting for a message"
    assert (ended.result_data or {}).get("detail") is None
    assert (cancelled.result_data or {}).get("detail") is None


async def test_a_parked_run_does_not_count_against_its_models_limit(tmp_path: Path) -> None:
    waiter = Agent(
        name="waiter", model=FunctionModel(_waits(60), name="m1"), tools=["wait_for_message"]
    )
    quick = Agent(name="quick", model=FunctionModel(lambda _r: reply("quick"), name="m1"))
    async with Harness(
        Settings(home=tmp_path), max_concurrent=10, model_limits={"m1": 1}, control_poll_s=0.02
    ) as h:
        waiting = await h.submit(waiter, "wait")
        await state_of(h, waiting, "WAITING_TOOL")
        async with asyncio.timeout(10):  # it never starts if the parked run held the model
            assert (await h.run(quick, "answer")).output == "quick"
        await h.send(waiting, "done waiting")
        result = await h.wait(waiting, timeout=10)
    assert result.output == "heard: [message from user]: done waiting"


async def test_parallel_parked_calls_keep_the_run_waiting_until_the_last_ends(
    tmp_path: Path,
) -> None:
    gates = {"a": asyncio.Event(), "b": asyncio.Event()}

    @tool(side_effects="idempotent")
    async def hold(ctx: ToolContext, name: str) -> str:
        """Wait for a gate of the test, parked."""
        await ctx.park(f"gate {name}", gates[name].wait())
        return f"{name} open"

    def model(request: ModelRequest) -> Message:
        if not _results(request):
            return reply(
                None, call("hold", {"name": "a"}, id="a"), call("hold", {"name": "b"}, id="b")
            )
        return reply(" + ".join(m.content or "" for m in _results(request)))

    holder = Agent(name="holder", model=FunctionModel(model), tools=[hold])
    quick = Agent(name="quick", model=ScriptedModel([reply("one"), reply("two")]))
    async with Harness(Settings(home=tmp_path), agents=(holder, quick), max_concurrent=1) as h:
        held = await h.submit(holder, "hold")
        await state_of(h, held, "WAITING_TOOL")
        async with asyncio.timeout(10):
            assert (await h.run(quick, "first")).output == "one"
        gates["a"].set()
        await asyncio.sleep(0.1)
        assert (await h.get(held)).state == "WAITING_TOOL"  # b still waits
        async with asyncio.timeout(10):
            assert (await h.run(quick, "second")).output == "two"
        gates["b"].set()
        result = await h.wait(held, timeout=10)
        events = await events_of(h, held)
    assert result.output == "a open + b open"
    assert sorted(w.reason for w in payloads(events, RunWaiting)) == ["gate a", "gate b"]
    assert [e.waiting for e in payloads(events, WaitEnded)] == [1, 0]


async def test_woken_runs_take_free_slots_before_queued_runs(tmp_path: Path) -> None:
    gate = asyncio.Event()
    order: list[str] = []

    @tool(side_effects="idempotent")
    async def hold(ctx: ToolContext) -> str:
        """Wait for the test's gate, parked."""
        await ctx.park("gate", gate.wait())
        return "open"

    def holding(request: ModelRequest) -> Message:
        if not _results(request):
            return reply(None, call("hold", {}, id="h1"))
        order.append("woken")
        return reply("held")

    blocker = asyncio.Event()

    async def blocking(request: ModelRequest) -> Message:
        order.append(_user_texts(request)[0])
        if _user_texts(request)[0] == "block":
            await blocker.wait()
        return reply("ok")

    holder = Agent(name="holder", model=FunctionModel(holding), tools=[hold])
    other = Agent(name="other", model=FunctionModel(blocking))
    async with Harness(Settings(home=tmp_path), agents=(holder, other), max_concurrent=1) as h:
        held = await h.submit(holder, "hold")
        await state_of(h, held, "WAITING_TOOL")
        block = await h.submit(other, "block")
        async with asyncio.timeout(10):
            while "block" not in order:
                await asyncio.sleep(0.01)
        queued = await h.submit(other, "queued")  # waits for the one slot
        gate.set()  # the held run wakes: it needs the slot too, and was there first
        await asyncio.sleep(0.1)
        blocker.set()
        for run_id in (held, block, queued):
            await h.wait(run_id, timeout=10)
    assert order == ["block", "woken", "queued"]


async def test_wait_for_message_says_when_none_came(tmp_path: Path) -> None:
    waiter = Agent(name="waiter", model=FunctionModel(_waits(1)), tools=["wait_for_message"])
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(waiter, "wait")
    assert result.output == "heard: No message within 1 s."


async def test_a_run_sends_a_message_to_another_run(tmp_path: Path) -> None:
    def sends(request: ModelRequest) -> Message:
        if not _results(request):
            to = _user_texts(request)[0].split()[-1]
            return reply(None, call("send_message", {"to": to, "content": "hi there"}, id="s1"))
        return reply(_results(request)[-1].content)

    waiter = Agent(name="bob", model=FunctionModel(_waits(30)), tools=["wait_for_message"])
    sender = Agent(name="alice", model=FunctionModel(sends), tools=["send_message"])
    async with Harness(Settings(home=tmp_path), control_poll_s=0.02) as h:
        bob = await h.submit(waiter, "wait")
        await state_of(h, bob, "WAITING_TOOL")
        alice = await h.submit(sender, f"write to {bob}")
        sent = await h.wait(alice, timeout=10)
        heard = await h.wait(bob, timeout=10)
        alice_events = await events_of(h, alice)
    (message,) = payloads(alice_events, MessageSent)
    assert sent.output == f"Message {message.message_id} sent to {bob}."
    assert (message.to_run, message.call_id) == (bob, "s1")
    assert heard.output == f"heard: [message from {alice} (agent alice)]: hi there"


async def test_send_refuses_bad_input_with_a_clear_error(tmp_path: Path) -> None:
    agent = Agent(name="quick", model=ScriptedModel([reply("done")]))
    async with Harness(Settings(home=tmp_path)) as h:
        finished = (await h.run(agent, "go")).run_id
        with pytest.raises(RunError, match="there is no run run_nope"):
            await h.send("run_nope", "hello")
        with pytest.raises(RunError, match=f"run {finished} is COMPLETED: a finished run"):
            await h.send(finished, "hello")
        with pytest.raises(ConfigError, match="the message is empty"):
            await h.send(finished, "  \n")
        with pytest.raises(ConfigError, match=f"more than {MAX_MESSAGE_CHARS:,}"):
            await h.send(finished, "x" * (MAX_MESSAGE_CHARS + 1))
        with pytest.raises(ConfigError, match="the sender has no name"):
            await h.send(finished, "hello", sender=" ")
        assert await h.store.inbox(finished, unread=False) == []


async def test_send_message_to_a_missing_run_tells_the_model(tmp_path: Path) -> None:
    model = ScriptedModel(
        [reply(None, call("send_message", {"to": "run_nope", "content": "hi"})), reply("gave up")]
    )
    agent = Agent(name="alice", model=model, tools=["send_message"])
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "write")
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert "Not sent: cannot send to run run_nope: there is no run run_nope" in (
        tool_message.content or ""
    )


async def test_a_message_tool_outside_a_harness_says_it_has_no_inbox() -> None:
    model = ScriptedModel([reply(None, call("wait_for_message", {"timeout_s": 1})), reply("ok")])
    agent = Agent(name="alone", model=model, tools=["wait_for_message"])
    toolset = Toolset([builtin_tool("wait_for_message")])
    loop = AgentLoop(agent, model=model, toolset=toolset, sink=RunRecorder("run_x", EventBus()))
    result = await loop.run("run_x", [Message.user("wait")])
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert "This run has no inbox" in (tool_message.content or "")


async def test_a_loop_without_a_runtime_reports_a_parked_wait() -> None:
    @tool(side_effects="idempotent")
    async def later(ctx: ToolContext) -> str:
        """Wait a moment, parked."""
        return await ctx.park("a moment", asyncio.sleep(0.01, result="later"))

    model = ScriptedModel([reply(None, call("later", {}, id="l1")), reply("ok")])
    agent = Agent(name="alone", model=model, tools=[later])
    sink = RunRecorder("run_x", EventBus())
    loop = AgentLoop(agent, model=model, toolset=Toolset([later]), sink=sink)
    result = await loop.run("run_x", [Message.user("wait")])
    assert next(m.content for m in result.messages if m.role == "tool") == "later"
    (waiting,) = payloads(sink.events, RunWaiting)
    assert (waiting.step, waiting.reason, waiting.call_id) == (1, "a moment", "l1")
    (ended,) = payloads(sink.events, WaitEnded)
    assert (ended.step, ended.call_id, ended.waiting) == (1, "l1", 0)


async def test_pausing_a_parked_run_and_resuming_it_waits_again(tmp_path: Path) -> None:
    waiter = Agent(name="waiter", model=FunctionModel(_waits(60)), tools=["wait_for_message"])
    async with Harness(Settings(home=tmp_path), agents=(waiter,), control_poll_s=0.02) as h:
        run_id = await h.submit(waiter, "wait")
        await state_of(h, run_id, "WAITING_TOOL")
        deadline = await h.store.get_blob(run_id, "wait_deadline:w1")
        await h.pause(run_id)
        await state_of(h, run_id, "PAUSED")
        await h.send(run_id, "while paused")
        await h.resume(run_id)
        result = await h.wait(run_id, timeout=10)
        events = await events_of(h, run_id)
        after = await h.store.get_blob(run_id, "wait_deadline:w1")
    assert result.output == "heard: [message from user]: while paused"
    assert deadline is not None
    assert after == deadline
    assert len(payloads(events, MessageReceived)) == 1


async def test_two_processes_deliver_each_message_once(tmp_path: Path, store_target: str) -> None:
    """A worker process and this one execute listeners on one store; each hears its message."""
    with OwnerProcess(tmp_path, store_target, "listener", None) as worker:
        async with Harness(Settings(home=tmp_path), store=store_target, execute=False) as queue:
            theirs = [await queue.submit(listener(), "listen 60") for _ in range(3)]
            for run_id in theirs:  # queued here, claimed by the worker
                await state_of(queue, run_id, "WAITING_TOOL")
        # Neither process takes the other's runs over, however loaded the machine: this one
        # adopts none, and its own leases outlast the test.
        async with Harness(
            Settings(home=tmp_path),
            store=store_target,
            agents=(listener(),),
            adopt=False,
            control_poll_s=0.02,
        ) as h:
            ours = [await h.submit(listener(), "listen 60") for _ in range(3)]
            runs = theirs + ours
            for run_id in ours:
                await state_of(h, run_id, "WAITING_TOOL")
            owners = [(await h.get(run_id)).owner for run_id in runs]
            for n, run_id in enumerate(runs):
                await h.send(run_id, f"note {n}")
            results = [await h.wait(run_id, timeout=30) for run_id in runs]
            delivered = [await h.store.inbox(run_id, unread=False) for run_id in runs]
            events = [await events_of(h, run_id) for run_id in runs]
        worker.kill()
    assert owners == [worker.owner] * 3 + [h.owner] * 3
    for n, result in enumerate(results):
        assert result.output == f"heard: [message from user]: note {n}"
        texts = [m.content or "" for m in result.messages if m.role != "assistant"]
        assert sum(f"note {n}" in text for text in texts) == 1
    assert all(len(inbox) == 1 and inbox[0].delivered_at for inbox in delivered)
    assert all(len(payloads(e, MessageReceived)) == 1 for e in events)


async def test_a_run_waiting_for_a_message_survives_a_sigkill_of_its_owner(
    tmp_path: Path, store_target: str
) -> None:
    with OwnerProcess(tmp_path, store_target, "listener", "listen 600") as first:
        run_id = first.run_id
        assert run_id is not None
        async with Harness(Settings(home=tmp_path), store=store_target, execute=False) as h:
            await state_of(h, run_id, "WAITING_TOOL")
            deadline = await h.store.get_blob(run_id, "wait_deadline:w1")
        first.kill()  # the process dies while the run waits

    async with Harness(
        Settings(home=tmp_path),
        store=store_target,
        agents=(listener(),),
        lease_s=1.0,
        control_poll_s=0.02,
    ) as second:
        async with asyncio.timeout(30):
            while (await second.get(run_id)).owner != second.owner:
                await asyncio.sleep(0.05)
        await state_of(second, run_id, "WAITING_TOOL")
        await second.send(run_id, "are you there?")
        result = await second.wait(run_id, timeout=30)
        after = await second.store.get_blob(run_id, "wait_deadline:w1")
        events = await events_of(second, run_id)
    assert result.output == "heard: [message from user]: are you there?"
    assert deadline is not None
    assert after == deadline
    read = [m.content or "" for m in result.messages if m.role != "assistant"]
    assert sum("are you there?" in text for text in read) == 1
    assert len(payloads(events, MessageReceived)) == 1
    # Before the kill; and after the takeover too, unless the message was in the inbox before
    # the re-run call came to wait (the row still said WAITING_TOOL from the first owner).
    waits = payloads(events, RunWaiting)
    assert 1 <= len(waits) <= 2
    assert {(w.reason, w.call_id) for w in waits} == {("message", "w1")}


async def test_a_run_with_messages_renders_in_the_cli_and_as_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def sends(request: ModelRequest) -> Message:
        if not _results(request):
            to = _user_texts(request)[0].split()[-1]
            return reply(None, call("send_message", {"to": to, "content": "ping"}, id="s1"))
        return reply("sent")

    waiter = Agent(name="bob", model=FunctionModel(_waits(30)), tools=["wait_for_message"])
    sender = Agent(name="alice", model=FunctionModel(sends), tools=["send_message"])
    async with Harness(Settings(home=tmp_path), control_poll_s=0.02) as h:
        bob = await h.submit(waiter, "wait")
        await state_of(h, bob, "WAITING_TOOL")
        alice = await h.submit(sender, f"write to {bob}")
        await h.wait(alice, timeout=10)
        await h.wait(bob, timeout=10)
        timelines = [await events_of(h, run_id) for run_id in (alice, bob)]
    renderer = LiveRenderer()
    for events in timelines:
        for event in events:
            renderer(event)
    shown = " ".join(capsys.readouterr().out.split())
    assert f"✉ to {bob} ping" in shown
    assert "… waiting: message" in shown
    assert f"✉ from {alice} (agent alice) ping" in shown
    for run_id, events in zip((alice, bob), timelines, strict=True):
        builder = TraceBuilder(run_id)
        spans = [span for event in events for span in builder.feed(event)]
        assert builder.ended
        assert any(span.name.startswith("execute_tool") for span in spans)
