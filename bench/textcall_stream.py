"""CPU time of reading a long reply while it streams (`TextCallStream`).

Each reply is about 30 KB and is fed 8 characters at a time, as a local server streams
tokens; the time is that of every `feed` plus the final `finish`, best of `--repeat`.
Reading the text again from its start for every chunk makes this grow with the square
of the reply's length; reading only what is new keeps it linear. The budget is 50 ms for a
reply of 30,000 characters. The last column counts how often the format read the whole
text again (at markers, not per chunk), which no machine changes.

    python bench/textcall_stream.py [--size 30000] [--chunk 8] [--repeat 3]

Prints a markdown table; the numbers depend on the machine (and on what else runs on it:
the ratio column, the growth when the reply doubles, depends on it least).
"""

from __future__ import annotations

import argparse
import json
import time

from harness.core.messages import ToolDefinition
from harness.gateway.textcalls import TextCallStream

TOOLS = (
    ToolDefinition(
        name="write_file",
        description="Write a file.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    ),
)

PROSE = "The quick brown fox jumps over the lazy dog; it < 3 and {x} [y] are fine. "
CODE = 'def f(x):\n    return {"a": [x, "<b>"], "c": x < 2}\n'


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _json_call(size: int) -> str:
    arguments = {"path": "out.py", "content": _fill(CODE, size)}
    return json.dumps({"name": "write_file", "arguments": arguments})


def scenarios(size: int) -> dict[str, tuple[str, str, str | None]]:
    """Name: (format, reply text, model family)."""
    third = size // 3
    return {
        "answer, auto": ("auto", _fill(PROSE, size), None),
        "answer, auto + Qwen family": ("auto", _fill(PROSE, size), "Qwen2.5-7B-Instruct"),
        "think + answer + call, hermes": (
            "hermes",
            f"<think>{_fill(PROSE, third)}</think>{_fill(PROSE, third)}"
            f"<tool_call>{_json_call(third)}</tool_call>",
            None,
        ),
        "think + call, auto": (
            "auto",
            f"<think>{_fill(PROSE, size // 2)}</think>"
            f"<tool_call>{_json_call(size // 2)}</tool_call>",
            None,
        ),
        "call, qwen3_coder": (
            "qwen3_coder",
            "<tool_call>\n<function=write_file>\n<parameter=path>\nout.py\n</parameter>\n"
            f"<parameter=content>\n{_fill(CODE, size)}\n</parameter>\n</function>\n</tool_call>",
            None,
        ),
        "analysis + final, harmony": (
            "harmony",
            f"<|channel|>analysis<|message|>{_fill(PROSE, size // 2)}<|end|>"
            f"<|start|>assistant<|channel|>final<|message|>{_fill(PROSE, size // 2)}",
            None,
        ),
        "call, mistral_v11": (
            "mistral_v11",
            f"[TOOL_CALLS]write_file{_json_call(size)[40:]}",
            None,
        ),
        "answer, llama3_json": ("llama3_json", _fill(PROSE, size), None),
    }


def measure(format: str, text: str, family: str | None, chunk: int) -> tuple[float, int]:
    """Seconds to feed `text` in `chunk`-character pieces and finish; and the whole-text reads."""
    reader = TextCallStream(format, tools=TOOLS, model_family=family)
    started = time.process_time()
    for start in range(0, len(text), chunk):
        reader.feed(text[start : start + chunk])
    reader.finish()
    return time.process_time() - started, reader.rereads


def best(repeat: int, format: str, text: str, family: str | None, chunk: int) -> tuple[float, int]:
    """The least CPU time of `repeat` runs, in milliseconds; and the whole-text reads."""
    runs = [measure(format, text, family, chunk) for _ in range(repeat)]
    return min(seconds for seconds, _ in runs) * 1000, runs[0][1]


def main() -> None:
    parser = argparse.ArgumentParser(description="CPU time of TextCallStream on long replies.")
    parser.add_argument("--size", type=int, default=30_000, help="characters per reply")
    parser.add_argument("--chunk", type=int, default=8, help="characters per chunk")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"Replies of about {args.size} characters (and twice that), fed {args.chunk} at a")
    print(f"time; CPU time of all feeds and the finish, best of {args.repeat}. A ratio near 2")
    print("is linear in the length of the reply, near 4 quadratic.")
    print()
    print("| reply | characters | CPU ms | CPU ms, 2× length | ratio | whole-text reads |")
    print("|---|---:|---:|---:|---:|---:|")
    doubled = scenarios(2 * args.size)
    for name, (format, text, family) in scenarios(args.size).items():
        once, reads = best(args.repeat, format, text, family, args.chunk)
        twice, _ = best(args.repeat, format, doubled[name][1], family, args.chunk)
        ratio = twice / once
        print(f"| {name} | {len(text)} | {once:.1f} | {twice:.1f} | {ratio:.1f} | {reads} |")


if __name__ == "__main__":
    main()
