// The trace waterfall of a run: its spans (agent, steps, model calls, tool calls,
// compactions) as bars on one time axis, children under their parent.

import { h, seconds } from "./dom.js";

/** Spans in drawing order (depth first, each level by start), with their depth. */
export function ordered(spans) {
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map();
  for (const span of spans) {
    const parent = span.parent_id && ids.has(span.parent_id) ? span.parent_id : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(span);
  }
  for (const list of children.values()) list.sort((a, b) => a.start - b.start);
  const out = [];
  const walk = (parent, depth) => {
    for (const span of children.get(parent) || []) {
      out.push({ span, depth });
      walk(span.span_id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

function attributes(attrs) {
  return h("dl", { class: "span-attrs" }, Object.entries(attrs || {}).map(([k, v]) => [
    h("dt", { class: "mono" }, k), h("dd", { class: "mono" }, typeof v === "string" ? v : JSON.stringify(v))]));
}

/** The waterfall of `trace` (`{spans: [...]}`, or the list itself). */
export function waterfall(trace) {
  const spans = Array.isArray(trace) ? trace : trace?.spans || [];
  if (!spans.length) return h("p", { class: "muted" }, "No spans yet.");
  const now = Date.now() / 1000;
  const t0 = Math.min(...spans.map((s) => s.start));
  const t1 = Math.max(...spans.map((s) => s.end ?? now));
  const total = Math.max(t1 - t0, 1e-6);
  const rows = ordered(spans).map(({ span, depth }) => {
    const end = span.end ?? now;
    const bar = h("span", {
      class: `bar bar-${String(span.status || "unset").toLowerCase()}${span.end == null ? " open" : ""}`,
      title: `${span.name}: ${seconds(end - span.start)}`,
    });
    bar.style.left = `${((span.start - t0) / total) * 100}%`;
    bar.style.width = `${Math.max(((end - span.start) / total) * 100, 0.4)}%`;
    const label = h("span", { class: "span-name" }, span.name);
    label.style.paddingLeft = `${depth * 0.9}rem`;
    // The row is the summary of a <details>: a click or Enter shows the span's attributes.
    const row = h("summary", { class: "span-row" },
      label, h("span", { class: "track", "aria-hidden": "true" }, bar),
      h("span", { class: "span-dur num" }, span.end == null ? "open" : seconds(end - span.start)));
    return h("li", { class: "span", dataset: { spanId: span.span_id, depth } },
      h("details", {}, row, attributes(span.attributes)));
  });
  return h("div", { class: "waterfall" },
    h("p", { class: "muted" }, `${spans.length} spans over ${seconds(total)}`),
    h("ol", { class: "spans" }, rows));
}
