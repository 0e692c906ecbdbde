"""A real Anthropic Messages API server on 127.0.0.1, answering from a script.

Point the `anthropic` SDK, `AnthropicModel` included, at it and test over real HTTP without
a key or a network::

    script = [FakeReply.tool_call("ls", {"path": "."}), FakeReply.text("two files")]
    with FakeAnthropicServer(script) as server:
        model = AnthropicModel("fake-model", base_url=server.base_url)
        ...
        assert server.requests[0].body["system"] == "Be brief."

The server speaks `POST /v1/messages` (JSON, or SSE events when the request says
`"stream": true`) and `GET /v1/models`. It takes the same `FakeReply` scripts as
`FakeOpenAIServer`, whose plumbing it shares: `reasoning` becomes a thinking block with a
signature the server checks when the block comes back, `calls` become `tool_use` blocks
(their arguments must be a JSON object), and the finish reasons `stop`, `length` and
`tool_calls` become `end_turn`, `max_tokens` and `tool_use` (any other value, such as
`refusal` or `pause_turn`, is sent as it is). `FakeReply.raw` sends bytes exactly as given;
`recorded` replays an exchange of the provider corpus, `error` builds Anthropic's error
answers and `error_event` a stream that breaks off with an `event: error`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any, cast
from urllib.parse import urlsplit

from harness.testing.fake_openai import (
    FakeOpenAIServer,
    FakeReply,
    RecordedRequest,
    Script,
    _Handler,  # pyright: ignore[reportPrivateUsage] - the plumbing is shared on purpose
)

__all__ = ["FakeAnthropicServer", "error", "error_event", "recorded", "signature"]

JSON = dict[str, Any]

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_SIGNATURE_PREFIX = "fake-signature:"
_SSE = (("content-type", "text/event-stream"),)


class FakeAnthropicServer(FakeOpenAIServer):
    """An Anthropic Messages API server on an ephemeral port of 127.0.0.1, run in a thread.

    Use it as a context manager, or call `start()` and `stop()`; `requests` records every
    request and `add` extends the script. When the script runs out, requests get HTTP 500
    with an error saying so. A request that sends back a thinking block this server signed,
    changed, gets HTTP 400 as from the real API.

    Args:
        script: The replies, in order, or a function of the request body returning one.
        model: The model name reported by `GET /v1/models` and in answers.
    """

    def __init__(self, script: Script = (), *, model: str = "fake-model") -> None:
        super().__init__(script, model=model)

    @property
    def base_url(self) -> str:
        """The API root to give clients, e.g. `http://127.0.0.1:54321` (no `/v1`)."""
        if self._httpd is None:
            raise RuntimeError("FakeAnthropicServer is not started: call start() or use `with`")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _AnthropicHandler


def error(
    status: int,
    message: str,
    *,
    type: str = "api_error",
    headers: Mapping[str, str] | None = None,
    request_id: str = "req_fake",
) -> FakeReply:
    """An Anthropic error answer: `{"type": "error", "error": {"type", "message"}, …}`."""
    body = {"type": "error", "error": {"type": type, "message": message}, "request_id": request_id}
    reply_headers = {"content-type": "application/json", "request-id": request_id}
    return FakeReply.raw(status, {**reply_headers, **(headers or {})}, json.dumps(body).encode())


def error_event(
    type: str = "overloaded_error", message: str = "Overloaded", *, text: str = ""
) -> FakeReply:
    """A 200 stream that sends `text` (if any), then an `event: error`, and ends."""
    events: list[JSON] = [_message_start(_message(FakeReply(), "fake-model", 0))]
    if text:
        events.append(_block_start(0, {"type": "text", "text": ""}))
        events.append(_block_delta(0, {"type": "text_delta", "text": text}))
    events.append({"type": "error", "error": {"type": type, "message": message}})
    return FakeReply.raw(200, dict(_SSE), b"".join(_sse(event) for event in events))


def recorded(
    exchange: Mapping[str, Any],
    *,
    chunk_size: int | None = None,
    pieces: Sequence[bytes] | None = None,
) -> FakeReply:
    """The answer of a recorded exchange (the `tests/corpus/providers` format), as raw bytes.

    The recorded status and headers, and the body as it was on the wire (`sse_raw`,
    `body_text`, or `body` as JSON); whole, in `chunk_size`-byte chunks, or as the given
    `pieces`, which must add up to the body.
    """
    response = cast(JSON, exchange["response"])
    headers = dict(cast("dict[str, str]", response.get("headers") or {}))
    if "sse_raw" in response:
        body = str(response["sse_raw"]).encode()
        headers["content-type"] = "text/event-stream"
    elif "body_text" in response:
        body = str(response["body_text"]).encode()
    else:
        body = json.dumps(response.get("body")).encode()
    headers.setdefault("content-type", "application/json")
    if pieces is not None:
        if b"".join(pieces) != body:
            raise ValueError("the pieces do not add up to the recorded body")
        return FakeReply.raw(int(response["status"]), headers, pieces)
    return FakeReply.raw(int(response["status"]), headers, body, chunk_size=chunk_size)


def signature(thinking: str) -> str:
    """The signature this server gives a thinking block with the text `thinking`."""
    return (
        _SIGNATURE_PREFIX
        + hashlib.sha256(thinking.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    )


class _AnthropicHandler(_Handler):
    def do_GET(self) -> None:
        fake = self._fake()
        fake.record(
            RecordedRequest(method="GET", path=self.path, headers=self._headers(), body=None)
        )
        if urlsplit(self.path).path.rstrip("/") == "/v1/models":
            entry = {"type": "model", "id": fake.model, "display_name": fake.model}
            listing = {"data": [entry], "has_more": False, "first_id": fake.model}
            self._send(FakeReply.raw(200, {"content-type": "application/json"}, _dumps(listing)))
        else:
            self._send(error(404, f"no route for GET {self.path}", type="not_found_error"))

    def do_POST(self) -> None:
        fake = self._fake()
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = _json_or_none(raw)
        number = fake.record(
            RecordedRequest(method="POST", path=self.path, headers=self._headers(), body=body)
        )
        if urlsplit(self.path).path.rstrip("/") != "/v1/messages":
            self._send(error(404, f"no route for POST {self.path}", type="not_found_error"))
            return
        if problem := _unsigned_thinking(_as_dict(body)):
            self._send(error(400, problem, type="invalid_request_error"))
            return
        try:
            reply = _render(fake.next_reply(body), _as_dict(body), number, fake.model)
        except Exception as exc:  # a broken script must show up in the test, not hang it
            reply = error(500, f"FakeAnthropicServer: the script raised {exc!r}")
        self._send(reply)


def _unsigned_thinking(body: JSON) -> str | None:
    """What the real API would say about a thinking block that was changed, if one was."""
    for number, turn in enumerate(map(_as_dict, _as_list(body.get("messages")))):
        for block in map(_as_dict, _as_list(turn.get("content"))):
            sent = str(block.get("signature", ""))
            changed = sent.startswith(_SIGNATURE_PREFIX) and sent != signature(
                str(block.get("thinking", ""))
            )
            if block.get("type") == "thinking" and changed:
                return f"messages.{number}: invalid signature in thinking block"
    return None


def _render(reply: FakeReply, request: JSON, number: int, model: str) -> FakeReply:
    """The reply as raw bytes: as given, a JSON message, or SSE events for a stream."""
    if reply.body is not None:
        return reply
    stream = bool(request.get("stream"))
    message = _message(reply, str(request.get("model") or model), number, strict=not stream)
    if stream:
        body = tuple(_sse(event) for event in _events(message, reply))
        return dataclasses.replace(reply, status=200, headers=_SSE, body=body)
    headers = (("content-type", "application/json"),)
    return dataclasses.replace(reply, status=200, headers=headers, body=(_dumps(message),))


def _message(reply: FakeReply, model: str, number: int, *, strict: bool = True) -> JSON:
    content: list[JSON] = []
    if reply.reasoning:
        thinking = reply.reasoning
        content.append({"type": "thinking", "thinking": thinking, "signature": signature(thinking)})
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for call in reply.calls:
        tool_input = _input(call.arguments, strict=strict)
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input})
    return {
        "id": f"msg_fake_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _STOP_REASONS.get(reply.finish_reason, reply.finish_reason),
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _input(arguments: str, *, strict: bool) -> Any:
    """The `input` of a tool_use block.

    A whole message must hold the arguments as an object, so a script whose arguments are
    not one fails (`strict`); a stream sends them as they are, in `partial_json` deltas.
    """
    try:
        return json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        if strict:
            raise
        return {}


def _events(message: JSON, reply: FakeReply) -> Iterator[JSON]:
    """The stream of a message: text, thinking and arguments each in several deltas."""
    yield _message_start(message)
    arguments = iter(call.arguments for call in reply.calls)
    for index, block in enumerate(cast("list[JSON]", message["content"])):
        given = next(arguments) if block["type"] == "tool_use" else ""
        yield from _block_events(index, block, given)
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    yield {"type": "message_delta", "delta": delta, "usage": usage}
    yield {"type": "message_stop"}


def _block_events(index: int, block: JSON, arguments: str) -> Iterator[JSON]:
    """One block: its start (empty), a ping after the first, its deltas, its stop."""
    kind = str(block["type"])
    start: JSON
    if kind == "tool_use":  # the arguments as the script wrote them
        start = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _split(arguments)]
    else:
        start = {**block, kind: ""}
        deltas = [{"type": f"{kind}_delta", kind: p} for p in _split(block[kind])]
    if kind == "thinking":
        start["signature"] = ""
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    yield _block_start(index, start)
    if index == 0:
        yield {"type": "ping"}  # as the API does, early in the stream
    yield from (_block_delta(index, delta) for delta in deltas)
    yield {"type": "content_block_stop", "index": index}


def _message_start(message: JSON) -> JSON:
    usage = {**message["usage"], "output_tokens": 1}
    head: JSON = {**message, "content": [], "stop_reason": None, "usage": usage}
    return {"type": "message_start", "message": head}


def _block_start(index: int, block: JSON) -> JSON:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _block_delta(index: int, delta: JSON) -> JSON:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _split(text: str, parts: int = 3) -> list[str]:
    if not text:
        return []
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(event: JSON) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def _dumps(value: object) -> bytes:
    return json.dumps(value).encode()


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _as_dict(value: object) -> JSON:
    return cast(JSON, value) if isinstance(value, dict) else {}


def _as_list(value: object) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []
