"""How runs look in a terminal: the only module that imports rich."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from harness.core.codec import dumps, event_to_dict
from harness.core.events import (
    AgentMessage,
    ApprovalDecided,
    ApprovalRequested,
    CompletionChecked,
    ContextCompacted,
    ModelDelta,
    ModelResponded,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStarted,
    StepStarted,
    ToolCompleted,
    ToolStarted,
)
from harness.core.usage import Usage
from harness.observability import SpanData, TracedSpan

__all__ = [
    "JsonRenderer",
    "LiveRenderer",
    "print_error",
    "print_hint",
    "print_note",
    "print_waterfall",
]

_STATUS_STYLE = {True: "green", False: "red"}


class JsonRenderer:
    """Prints every event as one JSON object per line."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def __call__(self, event: RunEvent) -> None:
        """Print one event."""
        self._out.write(dumps(event_to_dict(event)) + "\n")
        self._out.flush()


class LiveRenderer:
    """Prints a readable account of each step as it happens."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)
        self._streaming = False

    def __call__(self, event: RunEvent) -> None:  # noqa: C901 - one case per event shown
        """Print one event, if it is one a person wants to see."""
        match event.payload:
            case RunStarted() as p:
                self._run_started(p)
            case StepStarted(step=step):
                self._print(f"[dim]── step {step}[/]")
            case ModelDelta(text=text):
                self.console.print(escape(text), end="", style="italic")
                self._streaming = True
            case ModelResponded() as p:
                self._model_responded(p)
            case AgentMessage(content=content, final=final) if not final:
                # a final answer is shown once, by run_finished
                self._print(f"  [italic]{escape(content or '')}[/]")
            case ToolStarted(tool=tool, arguments=arguments):
                self._print(f"  [yellow]⚙ {escape(tool)}[/] {escape(arguments)}")
            case ToolCompleted() as p:
                self._tool_completed(p)
            case CompletionChecked() as p:
                self._completion_checked(p)
            case ContextCompacted() as p:
                self._context_compacted(p)
            case ApprovalRequested() as p:
                self._approval_requested(event.run_id, p)
            case ApprovalDecided() as p:
                self._approval_decided(p)
            case RunFinished() as p:
                self._run_finished(p)
            case RunFailed(error=error):
                self._print(f"[red bold]✘ run failed[/] [red]{escape(str(error))}[/]")
            case _:
                pass

    def _print(self, text: str) -> None:
        if self._streaming:
            self.console.print()
            self._streaming = False
        self.console.print(text)

    def _run_started(self, p: RunStarted) -> None:
        tools = ", ".join(p.tools) or "none"
        self._print(
            f"[bold]▶ {escape(p.agent)}[/] · model [cyan]{escape(p.model)}[/]"
            f" · tools {escape(tools)} · max {p.max_steps} steps"
        )

    def _model_responded(self, p: ModelResponded) -> None:
        from_text = p.tool_calls_from_text
        read = f" · calls read from text ({from_text.format})" if from_text else ""
        self._print(
            f"[dim]  model: {p.finish_reason} · {p.usage.input_tokens} in /"
            f" {p.usage.output_tokens} out tokens · {p.duration_s:.2f} s{read}[/]"
        )

    def _tool_completed(self, p: ToolCompleted) -> None:
        mark, style = ("✓", "green") if p.ok else ("✗", "red")
        status = "" if p.ok else f" {p.status}:"
        self._print(
            f"  [{style}]{mark}[/]{status} [dim]({p.duration_s:.2f} s)[/] {escape(p.result)}"
        )

    def _completion_checked(self, p: CompletionChecked) -> None:
        what = "output type" if p.check == "output_type" else "completion check"
        if p.passed:
            self._print(f"  [green]✓ {what} passed[/]")
            return
        found = p.error or "; ".join(p.errors or ()) or p.feedback or ""
        self._print(f"  [red]✗ {what} failed[/] {escape(found)}")

    def _context_compacted(self, p: ContextCompacted) -> None:
        self._print(
            f"[dim]  context {p.tier}: {p.tokens_before} → {p.tokens_after} tokens,"
            f" {p.messages_removed} messages not sent[/]"
        )

    def _approval_requested(self, run_id: str, p: ApprovalRequested) -> None:
        call = p.call_id
        self._print(
            f"  [magenta bold]⏸ approval needed[/] for {escape(p.tool)} "
            f"{escape(p.arguments)}" + (f" [dim]({escape(p.reason)})[/]" if p.reason else "")
        )
        self._print(
            f"    from another terminal: [bold]harness approve {run_id} {call}[/]  or  "
            f'[bold]harness deny {run_id} {call} --reason "..."[/]'
        )

    def _approval_decided(self, p: ApprovalDecided) -> None:
        verdict = "[green]approved[/]" if p.approved else "[red]denied[/]"
        reason = f": {escape(p.reason)}" if p.reason else ""
        self._print(f"  {verdict} by {escape(p.by)}{reason}")

    def _run_finished(self, p: RunFinished) -> None:
        title = "final answer" if p.complete else f"stopped: {p.termination}"
        style = _STATUS_STYLE[p.complete]
        self._print("")
        self.console.print(Panel(escape(p.output or ""), title=title, border_style=style))
        self._print(_usage_line(p.usage))


def _usage_line(usage: Usage) -> str:
    return (
        f"[dim]{usage.requests} model calls · {usage.tool_calls} tool "
        f"calls · {usage.input_tokens} in / {usage.output_tokens} out "
        "tokens[/]"
    )


def print_error(message: str, *, hint: str | None = None) -> None:
    """Print an error for a person to act on, on standard error."""
    console = Console(stderr=True, highlight=False)
    console.print(f"[red bold]error:[/] {escape(message)}", soft_wrap=True)  # one line
    if hint:
        console.print(escape(hint))


def print_hint(message: str) -> None:
    """Print advice for a person to act on, on standard error."""
    Console(stderr=True, highlight=False).print(escape(message))


def print_note(message: str) -> None:
    """Print a highlighted note on standard output."""
    Console(highlight=False).print(f"[bold magenta]{escape(message)}[/]")


_BAR_STYLE = {
    "invoke_agent": "bold white",
    "step": "blue",
    "chat": "cyan",
    "execute_tool": "green",
    "approval": "yellow",
    "compact_context": "magenta",
    "pause": "dim",
}


def print_waterfall(spans: Sequence[TracedSpan], *, width: int = 40) -> None:
    """Draw a run's spans as a waterfall: the tree, a bar on the run's time axis, details."""
    console = Console(highlight=False)
    if not spans:
        console.print("no spans: the run has no events")
        return
    t0 = min(t.span.start for t in spans)
    total = max(t.span.end for t in spans) - t0 or 1e-9
    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("span", no_wrap=True)
    table.add_column(f"0 → {_duration(total)}", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("details")
    for traced in spans:
        span = traced.span
        mark = (
            "[red]✗[/]" if span.status == "error" else ("[dim]…[/]" if not span.finished else " ")
        )
        name = f"{'  ' * traced.depth}{mark} {escape(span.name)}"
        style = _BAR_STYLE.get(span.name.split(" ")[0], "white")
        style = "red" if span.status == "error" else style
        bar = _bar(span.start - t0, span.end - span.start, total, width)
        table.add_row(name, f"[{style}]{bar}[/]", _duration(span.end - span.start), _details(span))
    console.print(f"[dim]trace {spans[0].trace_id}[/]")
    console.print(table)


def _bar(offset: float, length: float, total: float, width: int) -> str:
    start = min(width - 1, int(offset / total * width))
    cells = max(1, round(length / total * width))
    cells = min(cells, width - start)
    return " " * start + "█" * cells + " " * (width - start - cells)


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.2f} s"
    return f"{seconds / 60:.1f} min"


def _details(span: SpanData) -> str:
    """Key attributes of a span, as markup: tokens, tool status, compaction, errors, events."""
    a = span.attributes
    parts: list[str] = []
    if "gen_ai.usage.input_tokens" in a:
        out = a.get("gen_ai.usage.output_tokens", 0)
        parts.append(f"{a['gen_ai.usage.input_tokens']} in / {out} out")
    if "harness.tool.status" in a:
        parts.append(escape(str(a["harness.tool.status"])))
    if "harness.compaction.tokens_before" in a:
        before, after = a["harness.compaction.tokens_before"], a["harness.compaction.tokens_after"]
        parts.append(f"{before} → {after} tokens")
    if "harness.approval.approved" in a:
        verdict = "approved" if a["harness.approval.approved"] else "denied"
        parts.append(escape(f"{verdict} by {a.get('harness.approval.by')}"))
    if "harness.termination" in a:
        parts.append(escape(str(a["harness.termination"])))
    if span.status == "error" and a.get("error.type") not in (None, a.get("harness.tool.status")):
        parts.append(f"[red]{escape(str(a['error.type']))}[/]")
    kinds = [e.name for e in span.events]
    parts += [f"{kind} ×{kinds.count(kind)}" for kind in dict.fromkeys(kinds)]
    return " · ".join(parts)
