// Hand-written SVG charts. Each chart is a <figure data-chart=NAME> holding the drawing and,
// under it, the same numbers as a table (for screen readers, for copying, for tests), with
// every number also in a data-value attribute.

import { h, s } from "./dom.js";

const PALETTE = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

/** The colour of the i-th series. */
export function colour(i) {
  return PALETTE[i % PALETTE.length];
}

/** US dollars on an axis: as many decimals as the scale needs. */
export function usdTick(v, top) {
  const digits = top >= 1 ? 2 : Math.min(8, Math.ceil(-Math.log10(top)) + 1);
  return `$${v.toFixed(v === 0 ? 0 : digits)}`;
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function dataTable(caption, headings, rows) {
  return h("details", { class: "chart-data" }, h("summary", {}, "Numbers"),
    h("table", {}, h("caption", { class: "sr-only" }, caption),
      h("thead", {}, h("tr", {}, headings.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows)));
}

function figure(name, title, drawing, table, extra) {
  return h("figure", { class: "chart", dataset: { chart: name } },
    h("figcaption", {}, title), drawing, extra || "", table);
}

function empty(name, title) {
  return figure(name, title, h("p", { class: "muted empty" }, "No data yet."), "");
}

/**
 * Horizontal bars: rows [{key, value, text}] where `text` is the label shown after the bar.
 * `max` fixes the scale (1 for shares).
 */
export function barChart(name, title, rows, { max, format = String } = {}) {
  if (!rows.length) return empty(name, title);
  const top = max ?? niceMax(Math.max(...rows.map((r) => r.value)));
  const bars = h("ul", { class: "bars", role: "list" }, rows.map((r, i) => {
    const fillEl = h("span", { class: "bar-fill" });
    fillEl.style.width = `${top ? Math.min(100, (r.value / top) * 100) : 0}%`;
    fillEl.style.background = colour(i);
    return h("li", { dataset: { key: r.key, value: r.value } },
      h("span", { class: "bar-key" }, r.key),
      h("span", { class: "bar-track", "aria-hidden": "true" }, fillEl),
      h("span", { class: "bar-text num" }, r.text ?? format(r.value)));
  }));
  const table = dataTable(title, ["", "value"], rows.map((r) =>
    h("tr", { dataset: { key: r.key, value: r.value } }, h("th", { scope: "row" }, r.key), h("td", { class: "num" }, r.text ?? format(r.value)))));
  return figure(name, title, bars, table);
}

/**
 * Lines over a numeric x axis: series [{key, points: [{x, y, raw?}]}] (`raw`: the x as the API
 * gave it, kept in the table). `xFormat`/`yFormat` label the axes and the table.
 */
export function lineChart(name, title, series, { xFormat = String, yFormat = String, yTick = yFormat, xLabel = "", yLabel = "" } = {}) {
  const points = series.flatMap((se) => se.points);
  if (!points.length) return empty(name, title);
  const W = 480, H = 220, L = 70, R = 16, T = 12, B = 30;
  const xs = [...new Set(points.map((p) => p.x))].sort((a, b) => a - b);
  const x0 = xs[0], x1 = xs[xs.length - 1];
  const yTop = niceMax(Math.max(...points.map((p) => p.y)));
  // One x value sits in the middle; otherwise the first and last touch the edges.
  const X = (x) => x0 === x1 ? (L + W - R) / 2 : L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const Y = (y) => T + (1 - y / yTop) * (H - T - B);
  const grid = [0, 0.5, 1].map((f) => s("g", { class: "tick" },
    s("line", { x1: L, x2: W - R, y1: Y(f * yTop), y2: Y(f * yTop) }),
    s("text", { x: L - 6, y: Y(f * yTop) + 4, "text-anchor": "end" }, yTick(f * yTop, yTop))));
  const shown = xs.length <= 3 ? xs : [x0, xs[Math.floor(xs.length / 2)], x1];
  const anchor = (x) => shown.length === 1 ? "middle" : x === x0 ? "start" : x === x1 ? "end" : "middle";
  const xticks = shown.map((x) =>
    s("text", { x: X(x), y: H - B + 18, "text-anchor": anchor(x), class: "xtick" }, xFormat(x)));
  const lines = series.map((se, i) => {
    const pts = [...se.points].sort((a, b) => a.x - b.x);
    return s("g", { class: "series", dataset: { key: se.key }, stroke: colour(i), fill: colour(i) },
      s("polyline", { points: pts.map((p) => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(" "), fill: "none" }),
      pts.map((p) => s("circle", { cx: X(p.x).toFixed(1), cy: Y(p.y).toFixed(1), r: 3.5 },
        s("title", {}, `${se.key}: ${yFormat(p.y)} at ${xFormat(p.x)}`))));
  });
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title, preserveAspectRatio: "xMidYMid meet" },
    s("g", { class: "grid" }, grid), xticks, lines);
  const legend = series.length > 1 || series[0]?.key
    ? h("ul", { class: "legend" }, series.map((se, i) => {
      const swatch = h("span", { class: "swatch" });
      swatch.style.background = colour(i);
      return h("li", {}, swatch, se.key);
    }))
    : "";
  const rows = series.flatMap((se) => [...se.points].sort((a, b) => a.x - b.x).map((p) =>
    h("tr", { dataset: { key: se.key, x: p.raw ?? p.x, value: p.y } },
      h("td", {}, se.key), h("td", {}, xFormat(p.x)), h("td", { class: "num" }, yFormat(p.y)))));
  return figure(name, title, svg, dataTable(title, ["series", xLabel || "x", yLabel || "y"], rows), legend);
}
