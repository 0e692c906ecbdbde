"""How runs look in a terminal: the only module that imports rich."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from harness.core.codec import dumps, event_to_dict
from harness.core.events import (
    AgentMessage,
    ApprovalDecided,
    ApprovalRequested,
    ChildFinished,
    ChildStarted,
    CompletionChecked,
    ContextCompacted,
    Handoff,
    MessageReceived,
    MessageSent,
    ModelDelta,
    ModelResponded,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStarted,
    RunWaiting,
    StepStarted,
    ToolCompleted,
    ToolStarted,
    TriggerFired,
)
from harness.core.usage import Usage
from harness.observability import SpanData, TracedSpan
from harness.observability.cost import CostLine, CostReport
from harness.observability.stats import Stats

if TYPE_CHECKING:
    from harness.runtime.children import TreeNode

__all__ = [
    "JsonRenderer",
    "LiveRenderer",
    "print_cost",
    "print_error",
    "print_hint",
    "print_note",
    "print_run_tree",
    "print_stats",
    "print_table",
    "print_waterfall",
    "sparkline",
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
            case Handoff() as p:
                reason = f" [dim]({escape(p.reason)})[/]" if p.reason else ""
                self._print(
                    f"  [blue bold]⇢ handoff[/] {escape(p.from_agent)} → "
                    f"[bold]{escape(p.to_agent)}[/]{reason}"
                )
            case RunFinished() as p:
                self._run_finished(p)
            case RunFailed(error=error):
                self._print(f"[red bold]✘ run failed[/] [red]{escape(str(error))}[/]")
            case ChildStarted() as p:
                again = " (started before)" if p.existed else ""
                self._print(f"  [blue]↳ child {p.child_run_id}[/] {escape(p.agent)}{again}")
            case ChildFinished() as p:
                self._print(f"  [blue]↲ child {p.child_run_id}[/] {p.state.lower()}")
            case RunWaiting(reason=reason) if reason != "approval":
                self._print(f"  [dim]… waiting: {escape(reason)}[/]")
            case MessageSent(to_run=to, content=content):
                self._print(f"  [magenta]✉ to {escape(to)}[/] {escape(content)}")
            case MessageReceived() as p:
                who = f"{p.sender_run} (agent {p.sender})" if p.sender_run else p.sender
                self._print(f"  [magenta]✉ from {escape(who)}[/] {escape(p.content)}")
            case TriggerFired() as p:
                self._print(
                    f"[magenta]↳ started by trigger {escape(p.trigger)}[/] on {p.source_event}"
                    f" #{p.source_seq} of {escape(p.source_run_id)}"
                )
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


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, title: str = "") -> None:
    """Print rows under bold headers, every column left-aligned, text as given (no markup)."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", title=title)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    Console(highlight=False).print(table)


# `harness stats`: bars and sparklines of what past runs did.

_EIGHTHS = " ▏▎▍▌▋▊▉"
_SPARKS = "▁▂▃▄▅▆▇█"
_BAR_WIDTH = 20
_TERMINATION_STYLE = {"final_answer": "green", "error": "red", "cancelled": "dim"}


def print_stats(
    stats: Stats, window: str, *, file: TextIO | None = None, width: int | None = None
) -> None:
    """Draw the statistics of past runs: bars, a sparkline and percentiles.

    Args:
        stats: What `compute_stats` found.
        window: The window in words, e.g. `in the last 7d`.
        file: Where to draw; standard output by default.
        width: Columns to draw in; the terminal's (or `COLUMNS`) by default.
    """
    out = Console(file=file, width=width, highlight=False)
    scope = "".join(
        f" · {label} {escape(value)}"
        for label, value in (("agent", stats.agent), ("task type", stats.task_type))
        if value
    )
    if not stats.runs:
        out.print(f"no runs {escape(window)}{scope}")
        return
    per_step = _number(stats.tool_calls_per_step)
    out.print(
        f"[bold]{stats.runs} runs {escape(window)}[/]{scope} · {stats.steps} steps · "
        f"{stats.tool_calls} tool calls ({per_step} per step)"
    )
    out.print("states  " + " · ".join(f"{s.name} {s.count}" for s in stats.states))
    for part in (_terminations(stats), _tools(stats), _latencies(stats), _context(stats)):
        out.print()
        out.print(part)


def _terminations(stats: Stats) -> Table:
    table = _table("termination", "", "runs", "share")
    for share in stats.terminations:
        style = _TERMINATION_STYLE.get(share.name, "yellow")
        table.add_row(share.name, _bar(share.share, style), str(share.count), f"{share.share:.0%}")
    return table


def _tools(stats: Stats) -> Table:
    table = _table("tool", "calls", "per step", "success", "p50", "p95", "not run")
    for tool in stats.tools:
        rate = "–" if tool.success_rate is None else f"{tool.success_rate:.0%}"
        table.add_row(
            escape(tool.tool),
            str(tool.calls),
            f"{tool.calls_per_step:.2f}",
            _split_bar(tool.ok, tool.failed) + f" {rate:>4}",
            _seconds(tool.duration_s.p50),
            _seconds(tool.duration_s.p95),
            str(tool.not_run or ""),
        )
    return table


def _latencies(stats: Stats) -> Table:
    table = _table("latency", "count", "p50", "p95")
    rows = [("step", stats.step_latency_s)]
    rows += [(f"model {m.model}", m.duration_s) for m in stats.models]
    for name, spread in rows:
        table.add_row(escape(name), str(spread.count), _seconds(spread.p50), _seconds(spread.p95))
    return table


def _context(stats: Stats) -> Text:
    points = stats.context_tokens
    text = Text("context tokens by step (median across runs)\n", style="bold")
    if not points:
        return text.append("  no model replies", style="dim")
    medians = [p.median_input_tokens for p in points]
    text.append("  " + sparkline(medians), style="cyan")
    first, last = points[0], points[-1]
    text.append(
        f"  step {first.step}: {first.median_input_tokens:,.0f} → step {last.step}: "
        f"{last.median_input_tokens:,.0f} · max {max(medians):,.0f}",
        style="dim",
    )
    return text


def sparkline(values: Sequence[float]) -> str:
    """One block per value, from ▁ to █, scaled from 0 to the largest value."""
    top = max(values, default=0.0)
    if top <= 0:
        return _SPARKS[0] * len(values)
    return "".join(_SPARKS[_rounded(v / top * (len(_SPARKS) - 1))] for v in values)


def _bar(fraction: float, style: str, width: int = _BAR_WIDTH) -> Text:
    """A horizontal bar `fraction` (0 to 1) of `width` cells long, to an eighth of a cell."""
    eighths = _rounded(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    drawn = "█" * full + (_EIGHTHS[part] if part else "")
    return Text(drawn, style=style) + Text("·" * (width - len(drawn)), style="dim")


def _split_bar(ok: int, failed: int, width: int = _BAR_WIDTH) -> Text:
    """A bar of whole cells: █ (green) for the calls that succeeded, ░ (red) for the rest."""
    if not ok + failed:
        return Text("·" * width, style="dim")
    green = _rounded(ok / (ok + failed) * width)
    return Text("█" * green, style="green") + Text("░" * (width - green), style="red")


def _rounded(value: float) -> int:
    """`value` to the nearest whole number, halves up (`round` takes halves to even)."""
    return math.floor(value + 0.5)


def _table(*headers: str) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for index, header in enumerate(headers):
        left = index == 0 or header in ("", "success")  # names and bars
        table.add_column(header, justify="left" if left else "right")
    return table


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 1:
        return f"{value * 1000:.{2 if value < 0.01 else 0}f} ms"
    return f"{value:.2f} s"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def print_cost(report: CostReport, console: Console | None = None) -> None:
    """Print a cost report as a table: a row per line, the total, then a summary line."""
    out = console or Console(highlight=False)
    if not out.is_terminal:
        out.width = max(out.width, 160)  # a table piped to a file keeps its columns whole
    tool = "tool" in report.by
    cells = _tool_cells if tool else _cost_cells
    table = Table(box=None, pad_edge=False, header_style="bold")
    for dim in report.by:
        table.add_column(dim)
    for head in _TOOL_HEADS if tool else _COST_HEADS:
        table.add_column(head, justify="right")
    for line in report.lines if report.by else ():
        table.add_row(*(escape(_value(line.key[dim])) for dim in report.by), *cells(line))
    total = report.total
    if not tool:
        table.add_section()
        label = ["[bold]total[/]", *[""] * (len(report.by) - 1)] if report.by else []
        table.add_row(*label, *_cost_cells(total))
    out.print(table)
    since = "" if report.since is None else f" since {_iso_minute(report.since)}"
    note = " · by tool: the tokens of its results in later requests" if tool else ""
    out.print(
        f"[dim]{total.runs} runs{since} ({total.completed_runs} completed) · "
        f"{total.requests} model requests · {escape(_usd(total))}{note}[/]"
    )


_COST_HEADS = (
    "runs",
    "completed",
    "requests",
    "input",
    "output",
    "cached",
    "reasoning",
    "USD",
    "USD/completed",
)
_TOOL_HEADS = (
    "runs",
    "calls",
    "time s",
    "result tok",
    "carried in",
    "input tok",
    "cached",
    "USD",
    "USD/completed",
)


def _cost_cells(line: CostLine) -> list[str]:
    t = line.tokens
    return [
        str(line.runs),
        str(line.completed_runs),
        str(line.requests),
        f"{t.input:,}",
        f"{t.output:,}",
        f"{t.cached:,}",
        f"{t.reasoning:,}",
        _usd(line),
        _per_run(line),
    ]


def _tool_cells(line: CostLine) -> list[str]:
    return [
        str(line.runs),
        str(line.calls or 0),
        f"{line.seconds or 0.0:.2f}",
        f"{line.result_tokens or 0:,}",
        str(line.requests),
        f"{line.tokens.input:,}",
        f"{line.tokens.cached:,}",
        _usd(line),
        _per_run(line),
    ]


def _usd(line: CostLine) -> str:
    """US dollars, `unknown` when no price is known, `≥ $x` when only some are."""
    if line.usd is not None:
        return _dollars(line.usd)
    if line.usd_priced > 0:
        return f"≥ {_dollars(line.usd_priced)} (+{line.unpriced_requests} unknown)"
    return "unknown"


def _per_run(line: CostLine) -> str:
    per_run = line.usd_per_completed_run
    if per_run is not None:
        return _dollars(per_run)
    return "unknown" if line.usd is None and line.completed_runs else "-"


def _dollars(usd: float) -> str:
    if usd == 0 or usd >= 1:
        return f"${usd:,.2f}"
    return "$" + f"{usd:.6f}".rstrip("0")


def _value(value: str | None) -> str:
    return "(none)" if value is None else value


def _iso_minute(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="minutes")


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
        bar = _span_bar(span.start - t0, span.end - span.start, total, width)
        table.add_row(name, f"[{style}]{bar}[/]", _duration(span.end - span.start), _details(span))
    console.print(f"[dim]trace {spans[0].trace_id}[/]")
    console.print(table)


def _span_bar(offset: float, length: float, total: float, width: int) -> str:
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


_STATE_STYLE = {
    "COMPLETED": "green",
    "FAILED": "red",
    "CANCELLED": "red",
    "PAUSED": "yellow",
    "WAITING_TOOL": "yellow",
    "RUNNING": "cyan",
    "PENDING": "dim",
}


def print_run_tree(
    root: TreeNode, *, mark: str | None = None, console: Console | None = None
) -> None:
    """Draw a tree of runs: state, agent, steps and cost of each (`harness runs tree`).

    A node's cost is its own; a node with children also shows its subtree's total.
    `mark` is the run asked about, drawn in bold.
    """
    from rich.tree import Tree

    def label(node: TreeNode) -> Text:
        r = node.record
        text = Text()
        text.append(r.run_id, style="bold" if r.run_id == mark else "")
        text.append(f"  {r.state}", style=_STATE_STYLE.get(str(r.state), ""))
        text.append(f"  {r.agent}  {node.steps} steps  {_dollars(r.usage.cost_usd)}")
        if node.children:
            text.append(f" (tree {_dollars(r.total_usage.cost_usd)})", style="dim")
        return text

    def grow(branch: Tree, node: TreeNode) -> None:
        for child in node.children:
            grow(branch.add(label(child)), child)

    tree = Tree(label(root))
    grow(tree, root)
    (console or Console(highlight=False)).print(tree)
