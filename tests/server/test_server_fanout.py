"""Many streams of one run: one tail reads the store for all, each gets every event in order."""

import asyncio
import json

from server_support import Api, bearer


def seqs_of(text: str) -> list[int]:
    """The `id:` of each frame of a run's stream."""
    return [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]


async def wait_for(check: object, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.01)


async def step(api: Api, run_id: str, n: int) -> dict[str, object]:
    async with asyncio.timeout(30):
        while (run := (await api.get(f"/api/runs/{run_id}")).json())["step"] < n:
            await asyncio.sleep(0.01)
    return run


async def open_streams(api: Api, run_id: str, n: int, **headers: str) -> list[asyncio.Task[str]]:
    async def one() -> str:
        answer = await api.client.get(
            f"/api/runs/{run_id}/events", headers={**bearer("read"), **headers}
        )
        assert answer.status_code == 200, answer.text
        return answer.text

    return [asyncio.create_task(one()) for _ in range(n)]


async def test_many_streams_share_one_tail_and_each_gets_every_event_once_in_order(
    api: Api,
) -> None:
    run_id = await api.submit("gated", "count")
    streams = api.app.streams
    early = await open_streams(api, run_id, 20)
    await wait_for(lambda: streams.count == 20)
    assert streams.tails == 1
    api.gate.go(2)
    run = await step(api, run_id, 2)  # two model calls let out, the next one waits
    middle = run["last_seq"] // 2
    late = await open_streams(api, run_id, 10)
    resumed = await open_streams(api, run_id, 10, **{"Last-Event-ID": str(middle)})
    await wait_for(lambda: streams.count == 40)
    assert streams.tails == 1  # forty streams, one reader of the store
    api.gate.go(1000)
    texts = await asyncio.gather(*early, *late)
    resumed_texts = await asyncio.gather(*resumed)
    last = (await api.state(run_id, "COMPLETED"))["last_seq"]
    stored = (await api.client.get(f"/api/runs/{run_id}/events", headers=bearer("read"))).text
    assert seqs_of(stored) == list(range(1, last + 1))
    for text in texts:
        assert text == stored  # every frame, byte for byte, then `event: end`
    for text in resumed_texts:
        assert seqs_of(text) == list(range(middle + 1, last + 1))
        assert text.endswith("event: end\ndata: {}\n\n")
    assert streams.tails == 0
    assert streams.count == 0


async def test_each_run_has_its_own_tail_and_frames_carry_the_envelope(api: Api) -> None:
    gated = await api.submit("gated", "count")
    quick = await api.submit("quick", "count")
    on_gated = await open_streams(api, gated, 3)
    on_quick = await open_streams(api, quick, 3)
    await wait_for(lambda: api.app.streams.count >= 3 + int(not on_quick[0].done()))
    assert api.app.streams.tails in (1, 2)  # the quick run may be over already
    api.gate.go(1000)
    for text in await asyncio.gather(*on_gated, *on_quick):
        frames = [f for f in text.split("\n\n") if f]
        assert frames[-1] == "event: end\ndata: {}"
        for body in frames[:-1]:
            fields = dict(line.split(": ", 1) for line in body.splitlines())
            envelope = json.loads(fields["data"])
            assert envelope["run_id"] in (gated, quick)
            assert str(envelope["seq"]) == fields["id"]
            assert envelope["type"] == fields["event"]
    assert api.app.streams.tails == 0


async def test_the_tail_stops_when_its_last_stream_leaves(api: Api) -> None:
    run_id = await api.submit("gated", "count")
    tasks = await open_streams(api, run_id, 5)
    await wait_for(lambda: api.app.streams.count == 5)
    assert api.app.streams.tails == 1
    for task in tasks[:4]:
        task.cancel()
    await wait_for(lambda: api.app.streams.count == 1)
    assert api.app.streams.tails == 1  # one stream still follows the run
    tasks[4].cancel()
    await wait_for(lambda: api.app.streams.count == 0)
    assert api.app.streams.tails == 0
    again = await open_streams(api, run_id, 1)  # a new stream gets a new tail, from the start
    await wait_for(lambda: api.app.streams.tails == 1)
    api.gate.go(1000)
    last = (await api.state(run_id, "COMPLETED"))["last_seq"]
    assert seqs_of(await again[0]) == list(range(1, last + 1))
