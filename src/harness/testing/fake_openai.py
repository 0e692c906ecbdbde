"""A real OpenAI-compatible HTTP server on 127.0.0.1, answering from a script.

Point any OpenAI-compatible client at it, `OpenAIModel` included, and test over real HTTP
without a model or a network::

    script = [FakeReply.tool_call("ls", {"path": "."}), FakeReply.text("two files")]
    with FakeOpenAIServer(script) as server:
        model = OpenAIModel("fake-model", base_url=server.base_url)
        ...
        assert server.requests[0].body["messages"][0]["role"] == "system"

The server speaks `POST /v1/chat/completions` (JSON, or SSE when the request says
`"stream": true`), `GET /v1/models` and, when given, llama.cpp's `GET /props`. Replies
built with `FakeReply.text`, `FakeReply.tool_call` and `FakeReply.tool_calls` are rendered
in either form; `FakeReply.raw` sends bytes exactly as given, e.g. to replay a recorded
exchange. A reply with `reset_after` set breaks its connection with a TCP reset after that
many body bytes; `harness.testing.faults` builds the usual failures (rate limits, resets,
slow answers …).
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from harness.core.messages import ToolCall

__all__ = ["FakeOpenAIServer", "FakeReply", "RecordedRequest", "Script"]

Script = Iterable["FakeReply"] | Callable[[Any], "FakeReply"]
"""Replies served in order, or a function from the parsed request body to a reply."""

_FRAMING_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "connection", "content-encoding"}
)


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    """`GET` or `POST`."""
    path: str
    """The request path, e.g. `/v1/chat/completions`."""
    headers: dict[str, str]
    """Request headers, with lower-case names."""
    body: Any
    """The parsed JSON body; `None` when there was none or it was not JSON."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FakeReply:
    """One scripted answer: build it with `text`, `tool_call`, `tool_calls` or `raw`."""

    content: str | None = None
    """Answer text of the assistant message."""
    reasoning: str | None = None
    """Reasoning text, sent as `reasoning_content`."""
    calls: tuple[ToolCall, ...] = ()
    """Tool calls of the assistant message."""
    finish_reason: str = "stop"
    """The `finish_reason` sent."""
    input_tokens: int = 10
    """Reported `prompt_tokens`."""
    output_tokens: int = 5
    """Reported `completion_tokens`."""
    status: int = 200
    """HTTP status (raw replies)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra response headers (raw replies)."""
    body: tuple[bytes, ...] | None = None
    """Raw body pieces; set only for raw replies."""
    delay_s: float = 0.0
    """Seconds to wait before sending anything."""
    reset_after: int | None = None
    """Reset the connection (TCP RST) after sending this many body bytes; `None` sends all."""
    hold: threading.Event | None = None
    """Once `hold_after` body pieces are sent (a stream's first chunks), wait for this event
    before sending the rest: a test sees what the client does with half an answer."""
    hold_after: int = 2
    """Body pieces sent before `hold` is waited for."""

    @classmethod
    def text(
        cls,
        content: str,
        *,
        reasoning: str | None = None,
        finish_reason: str = "stop",
        input_tokens: int = 10,
        output_tokens: int = 5,
    ) -> FakeReply:
        """An answer with text (and optionally reasoning)."""
        return cls(
            content=content,
            reasoning=reasoning,
            finish_reason=finish_reason,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: Mapping[str, Any] | str,
        *,
        id: str | None = None,
        content: str | None = None,
    ) -> FakeReply:
        """An answer calling one tool; `arguments` is a dict or the exact JSON string."""
        return cls.tool_calls([(name, arguments, id)], content=content)

    @classmethod
    def tool_calls(
        cls, calls: Iterable[ToolCall | tuple[Any, ...]], *, content: str | None = None
    ) -> FakeReply:
        """An answer calling several tools: `ToolCall`s or `(name, arguments[, id])` tuples.

        Calls without an id get `call_<n>`.
        """
        built = tuple(_tool_call(call, n) for n, call in enumerate(calls))
        return cls(content=content, calls=built, finish_reason="tool_calls")

    @classmethod
    def raw(
        cls,
        status: int,
        headers: Mapping[str, str] | None = None,
        body: bytes | Sequence[bytes] = b"",
        chunk_size: int | None = None,
        delay_s: float = 0.0,
        reset_after: int | None = None,
    ) -> FakeReply:
        """Bytes sent exactly as given, to replay a recorded exchange.

        Args:
            status: HTTP status.
            headers: Response headers; framing headers (content-length, transfer-encoding,
                connection, content-encoding) are replaced by the server's own.
            body: The body, or a sequence of pieces each sent as its own HTTP chunk.
            chunk_size: Send `body` as chunks of this many bytes, each flushed on its own.
            delay_s: Seconds to wait before sending the status line.
            reset_after: Reset the connection after this many bytes of `body`.
        """
        if isinstance(body, bytes) and chunk_size:
            pieces = tuple(body[i : i + chunk_size] for i in range(0, len(body), chunk_size))
        else:
            pieces = (body,) if isinstance(body, bytes) else tuple(body)
        return cls(
            status=status,
            headers=tuple((headers or {}).items()),
            body=pieces,
            delay_s=delay_s,
            reset_after=reset_after,
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        type: str = "server_error",
        headers: Mapping[str, str] | None = None,
    ) -> FakeReply:
        """An OpenAI-style JSON error answer."""
        body = json.dumps({"error": {"message": message, "type": type, "code": None}})
        return cls.raw(
            status, {"content-type": "application/json", **(headers or {})}, body.encode()
        )


class FakeOpenAIServer:
    """An OpenAI-compatible server on an ephemeral port of 127.0.0.1, run in a thread.

    Use it as a context manager, or call `start()` and `stop()`. When the script runs out,
    requests get HTTP 500 with an error saying so.

    Args:
        script: The replies, in order, or a function of the request body returning one.
        model: The model name reported by `GET /v1/models` and in answers.
        model_info: Extra fields of the model's `GET /v1/models` entry, e.g. vLLM's
            `{"max_model_len": 32768}`.
        props: The body of `GET /props` (llama.cpp's server properties, e.g.
            `{"default_generation_settings": {"n_ctx": 8192}}`); `None` answers 404.
    """

    def __init__(
        self,
        script: Script = (),
        *,
        model: str = "fake-model",
        model_info: Mapping[str, Any] | None = None,
        props: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.model_info = dict(model_info or {})
        self.props = dict(props) if props is not None else None
        self.requests: list[RecordedRequest] = []
        """Every request received, in order."""
        self._function = script if callable(script) else None
        self._queue: deque[FakeReply] = deque() if callable(script) else deque(script)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The API root to give clients, e.g. `http://127.0.0.1:54321/v1`."""
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not started: call start() or use `with`")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def add(self, *replies: FakeReply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._queue.extend(replies)

    def start(self) -> FakeOpenAIServer:
        """Start serving in a daemon thread."""
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.record, self._httpd.next_reply = self._record, self._next_reply
        self._httpd.stopping, self._httpd.model = self._stopping, self.model
        self._httpd.model_info, self._httpd.props = self.model_info, self.props
        # A short poll interval makes stop() quick: shutdown() waits for the next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            args=(0.02,),
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()
        return self

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler: a fake of another wire format (Anthropic) brings its own."""
        return _Handler

    def stop(self) -> None:
        """Stop serving and close every socket."""
        if self._httpd is None or self._thread is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self.requests.append(request)
            return len(self.requests)

    def _next_reply(self, body: Any) -> FakeReply:
        if self._function is not None:
            return self._function(body)
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return FakeReply.error(
            500,
            f"{type(self).__name__}: the script has no reply left for "
            f"request #{len(self.requests)}; add FakeReply items to it",
            type="fake_script_exhausted",
        )


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    record: Callable[[RecordedRequest], int]
    next_reply: Callable[[Any], FakeReply]
    stopping: threading.Event
    model: str
    model_info: dict[str, Any]
    props: dict[str, Any] | None

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a timeout test) is expected; anything else is shown.
        if not isinstance(sys.exception(), ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        fake = self._fake()
        fake.record(
            RecordedRequest(method="GET", path=self.path, headers=self._headers(), body=None)
        )
        if self.path.rstrip("/").endswith("/models"):
            entry = {"id": fake.model, "object": "model", "owned_by": "harness"}
            self._send_json({"object": "list", "data": [{**entry, **fake.model_info}]})
        elif self.path.rstrip("/") == "/props" and fake.props is not None:
            self._send_json(fake.props)
        else:
            self._send(FakeReply.error(404, f"no route for GET {self.path}", type="not_found"))

    def do_POST(self) -> None:
        fake = self._fake()
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = _json_or_none(raw)
        number = fake.record(
            RecordedRequest(method="POST", path=self.path, headers=self._headers(), body=body)
        )
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(FakeReply.error(404, f"no route for POST {self.path}", type="not_found"))
            return
        try:
            reply = fake.next_reply(body)
        except Exception as exc:  # a broken script must show up in the test, not hang it
            reply = FakeReply.error(500, f"FakeOpenAIServer: the script raised {exc!r}")
        self._send(_render(reply, _as_dict(body), number, fake.model))

    def _send_json(self, body: Any) -> None:
        self._send(
            FakeReply.raw(200, {"content-type": "application/json"}, json.dumps(body).encode())
        )

    def _send(self, reply: FakeReply) -> None:
        if reply.delay_s and self._fake().stopping.wait(reply.delay_s):
            return
        pieces = [piece for piece in reply.body or () if piece]
        chunked = len(pieces) > 1
        self.send_response_only(reply.status)
        for name, value in reply.headers:
            if name.lower() not in _FRAMING_HEADERS:
                self.send_header(name, value)
        self.send_header("Connection", "close")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(sum(map(len, pieces))))
        self.end_headers()
        self.close_connection = True
        budget = reply.reset_after
        for index, piece in enumerate(pieces):
            if index == reply.hold_after and not self._held(reply.hold):
                return
            if budget is not None:
                piece, budget = piece[:budget], budget - len(piece[:budget])
            if piece:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                self.wfile.flush()
            if budget == 0:
                self._reset()
                return
        if budget is not None:
            self._reset()
        elif chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _held(self, hold: threading.Event | None) -> bool:
        """Wait for `hold` (if any); `False` when the server stops first."""
        stopping = self._fake().stopping
        while hold is not None and not hold.wait(0.05):
            if stopping.is_set():
                return False
        return True

    def _reset(self) -> None:
        """Close the socket with a TCP reset, as a crashed server or a proxy would.

        What was sent first reaches the client: a reset that overtakes data still in flight
        would make the client lose it, and a test see a different fault than it asked for.
        """
        _drain(self.connection)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # The read side holds a reference to the socket: release it so close() is immediate.
        self.rfile.close()
        self.connection.close()

    def _headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def _fake(self) -> _HTTPServer:
        return cast(_HTTPServer, self.server)


def _render(reply: FakeReply, request: dict[str, Any], number: int, model: str) -> FakeReply:
    """The reply as raw bytes: as given, JSON, or SSE when the request asked for a stream."""
    if reply.body is not None:
        return reply
    model = str(request.get("model") or model)
    if request.get("stream"):
        usage = bool(_as_dict(request.get("stream_options")).get("include_usage"))
        pieces = tuple(_sse(chunk) for chunk in _chunks(reply, model, number, usage))
        return dataclasses.replace(
            reply,
            status=200,
            headers=(("content-type", "text/event-stream"),),
            body=(*pieces, b"data: [DONE]\n\n"),
        )
    completion = {
        **_envelope(model, number, "chat.completion"),
        "choices": [{"index": 0, "message": _message(reply), "finish_reason": reply.finish_reason}],
        "usage": _usage(reply),
    }
    return dataclasses.replace(
        reply,
        status=200,
        headers=(("content-type", "application/json"),),
        body=(json.dumps(completion).encode(),),
    )


def _message(reply: FakeReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = [_wire_call(call) for call in reply.calls]
    return message


def _chunks(reply: FakeReply, model: str, number: int, usage: bool) -> Iterable[dict[str, Any]]:
    """Chunks of a streamed answer: text and arguments split into several fragments."""
    envelope = _envelope(model, number, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    yield from (chunk({"reasoning_content": part}) for part in _split(reply.reasoning))
    yield from (chunk({"content": part}) for part in _split(reply.content))
    for index, call in enumerate(reply.calls):
        yield chunk({"tool_calls": [{"index": index, **_wire_call(call, arguments="")}]})
        for part in _split(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, reply.finish_reason)
    if usage:
        yield {**envelope, "choices": [], "usage": _usage(reply)}


def _wire_call(call: ToolCall, *, arguments: str | None = None) -> dict[str, Any]:
    function = {"name": call.name, "arguments": call.arguments if arguments is None else arguments}
    return {"id": call.id, "type": "function", "function": function}


def _tool_call(call: ToolCall | tuple[Any, ...], n: int) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    name, arguments, *rest = call
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call_id = rest[0] if rest and rest[0] else f"call_{n}"
    return ToolCall(id=str(call_id), name=str(name), arguments=arguments)


def _envelope(model: str, number: int, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
    }


def _usage(reply: FakeReply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _split(text: str | None, parts: int = 3) -> list[str]:
    if not text:
        return []
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _as_dict(value: object) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


_SIOCOUTQ = 0x5411  # bytes in a socket's send queue not yet acknowledged by the peer


def _drain(connection: socket.socket, limit_s: float = 2.0) -> None:
    """Wait until the peer acknowledged everything sent, then a moment for it to read."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        unsent = struct.unpack("i", fcntl.ioctl(connection, _SIOCOUTQ, b"\0\0\0\0"))[0]
        if unsent == 0:
            break
        time.sleep(0.001)
    time.sleep(0.05)
