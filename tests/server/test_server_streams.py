"""`Streams.admit`: the caps on open event streams, counted until a stream ends or is dropped."""

import gc
from collections.abc import AsyncIterator

import pytest

from harness.server.problems import Problem
from harness.server.sse import Streams


async def chunks(n: int) -> AsyncIterator[bytes]:
    for i in range(n):
        yield str(i).encode()


async def test_a_caller_and_the_server_have_their_caps() -> None:
    streams = Streams(max_open=3, max_per_name=2)
    held = [streams.admit("ann", chunks(1)), streams.admit("ann", chunks(1))]
    with pytest.raises(Problem) as one_more:
        streams.admit("ann", chunks(1))
    assert one_more.value.status == 429
    assert one_more.value.headers == {"Retry-After": "5"}
    held.append(streams.admit("bob", chunks(1)))
    with pytest.raises(Problem) as full:
        streams.admit("cy", chunks(1))
    assert full.value.status == 503
    assert [b"0"] == [chunk async for chunk in held.pop(0)]  # read to its end: ann has room
    held.append(streams.admit("ann", chunks(1)))


async def test_a_stream_dropped_before_it_started_gives_its_place_back() -> None:
    streams = Streams(max_open=1, max_per_name=1)
    unstarted = streams.admit("ann", chunks(3))
    with pytest.raises(Problem):
        streams.admit("ann", chunks(3))
    del unstarted  # the client went away before the response was sent
    gc.collect()
    broken = streams.admit("ann", chunks(3))
    async for _ in broken:
        break  # a client that disconnects mid-stream: the generator is closed
    await broken.aclose()  # type: ignore[attr-defined]
    assert [b"0", b"1", b"2"] == [c async for c in streams.admit("ann", chunks(3))]
