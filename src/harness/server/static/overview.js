// Page 3: the overview — cost by model, tool and task type over time, termination reasons,
// tool success rates, the context-token trend, and the experiments' reports.

import { get } from "./api.js";
import { barChart, lineChart, usdTick } from "./charts.js";
import { count, epoch, fill, h, percent, seconds, usd } from "./dom.js";

const DIMENSIONS = [["model", "Cost by model"], ["tool", "Cost by tool"], ["task_type", "Cost by task type"]];

function bucketLabel(bucket) {
  return (t) => {
    const d = new Date(t * 1000);
    return bucket === "day"
      ? d.toLocaleDateString("en-GB", { day: "2-digit", month: "short" })
      : d.toLocaleString("en-GB", { day: "2-digit", month: "short", hour: "2-digit", minute: "2-digit" });
  };
}

async function costOverTime(by, title, bucket) {
  const data = await get("/api/cost/series", { by, bucket });
  const series = (data.series || []).map((se) => ({
    key: se.key === null || se.key === undefined || se.key === "" ? "(none)" : String(se.key),
    points: se.points.map((p) => ({ x: epoch(p.t), y: p.cost_usd ?? 0, raw: p.t })),
  }));
  return lineChart(`cost-${by}`, title, series, { xFormat: bucketLabel(bucket), yFormat: usd, yTick: usdTick, xLabel: bucket, yLabel: "USD" });
}

function costTable(data) {
  const rows = data.rows || [];
  if (!rows.length) return h("p", { class: "muted" }, "No runs yet.");
  return h("div", { class: "table-wrap" }, h("table", { class: "cost", dataset: { table: "cost-model" } },
    h("caption", {}, "Totals by model"),
    h("thead", {}, h("tr", {}, ["Model", "Runs", "Input tokens", "Output tokens", "Cost"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.map((r) => h("tr", { dataset: { key: r.key ?? "" } },
      h("th", { scope: "row" }, r.key ?? "(none)"), h("td", { class: "num" }, count(r.runs)),
      h("td", { class: "num" }, count(r.input_tokens)), h("td", { class: "num" }, count(r.output_tokens)),
      h("td", { class: "num", dataset: { value: r.cost_usd ?? "" } }, usd(r.cost_usd)))))));
}

function statsCharts(stats) {
  const terminations = (stats.terminations || []).map((t) => ({ key: t.name, value: t.count, text: `${t.count} (${percent(t.share)})` }));
  const tools = (stats.tools || []).map((t) => ({ key: t.tool, value: t.success_rate ?? 0, text: `${percent(t.success_rate)} of ${t.calls}` }));
  const context = [{ key: "median input tokens", points: (stats.context_tokens || []).map((c) => ({ x: c.step, y: c.median_input_tokens })) }];
  const latency = stats.step_latency_s || {};
  return [
    h("dl", { class: "facts summary", dataset: { chart: "summary" } },
      h("dt", {}, "Runs"), h("dd", { dataset: { fact: "runs" } }, count(stats.runs)),
      h("dt", {}, "Steps"), h("dd", { dataset: { fact: "steps" } }, count(stats.steps)),
      h("dt", {}, "Tool calls per step"), h("dd", { dataset: { fact: "calls-per-step" } }, (stats.tool_calls_per_step ?? 0).toFixed(2)),
      h("dt", {}, "Step latency p50 / p95"), h("dd", { dataset: { fact: "latency" } }, `${seconds(latency.p50)} / ${seconds(latency.p95)}`)),
    barChart("terminations", "Termination reasons", terminations),
    barChart("tool-success", "Tool success rates", tools, { max: 1, format: percent }),
    lineChart("context-tokens", "Context tokens by step (median)", context, { xFormat: (x) => `step ${Math.round(x)}`, yFormat: count, xLabel: "step", yLabel: "tokens" }),
  ];
}

function experimentReport(report) {
  const heads = ["Variant", "Runs", "Ended", "Completed", "Completion rate", "Steps (mean)", "Tokens / run", "Cost / run", "Cost / completed", "Latency p50 / p95"];
  const rate = (v) => v.completion_rate === null ? "–"
    : `${percent(v.completion_rate)}${v.interval ? ` [${percent(v.interval[0])}, ${percent(v.interval[1])}]` : ""}`;
  return h("section", { class: "experiment", dataset: { experiment: report.experiment } },
    h("h3", {}, report.experiment),
    h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, (report.variants || []).map((v) => h("tr", { dataset: { variant: v.variant } },
        h("th", { scope: "row" }, v.variant), h("td", { class: "num" }, count(v.runs)), h("td", { class: "num" }, count(v.ended)),
        h("td", { class: "num" }, count(v.completed)), h("td", { class: "num", dataset: { value: v.completion_rate ?? "" } }, rate(v)),
        h("td", { class: "num" }, v.steps_mean === null ? "–" : v.steps_mean.toFixed(1)),
        h("td", { class: "num" }, count(v.tokens_per_run)), h("td", { class: "num" }, usd(v.cost_per_run)),
        h("td", { class: "num" }, usd(v.cost_per_completed)),
        h("td", { class: "num" }, `${seconds(v.latency_p50_s)} / ${seconds(v.latency_p95_s)}`)))))),
    h("p", { class: "muted significance" }, report.significance?.line || ""));
}

async function section(target, build) {
  try {
    fill(target, ...[await build()].flat());
  } catch (error) {
    fill(target, h("p", { class: "muted" }, `Could not load: ${error.message}`));
  }
}

/** Mount the overview in `main`; returns its cleanup. */
export function mountOverview(main) {
  const bucket = h("select", { id: "bucket" }, h("option", { value: "hour" }, "hour"), h("option", { value: "day", selected: true }, "day"));
  const costCharts = h("div", { class: "charts" });
  const costTotals = h("div");
  const statsBox = h("div", { class: "charts" });
  const experiments = h("div");
  const loadCost = () => section(costCharts, () =>
    Promise.all(DIMENSIONS.map(([by, title]) => costOverTime(by, title, bucket.value))));
  bucket.addEventListener("change", loadCost);
  const refresh = () => {
    loadCost();
    section(costTotals, async () => costTable(await get("/api/cost", { by: "model" })));
    section(statsBox, async () => statsCharts(await get("/api/stats")));
    section(experiments, async () => {
      const reports = await get("/api/experiments");
      const list = Array.isArray(reports) ? reports : reports.experiments || [];
      return list.length ? list.map(experimentReport) : h("p", { class: "muted" }, "No experiments in harness.toml.");
    });
  };
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, "Overview"),
      h("button", { type: "button", class: "secondary", onclick: refresh }, "Refresh")),
    h("section", { class: "card", "aria-labelledby": "h-cost" },
      h("div", { class: "section-head" }, h("h2", { id: "h-cost" }, "Cost over time"),
        h("label", { for: "bucket" }, "Bucket ", bucket)),
      costCharts, costTotals),
    h("section", { class: "card", "aria-labelledby": "h-stats" }, h("h2", { id: "h-stats" }, "How runs go"), statsBox),
    h("section", { class: "card", "aria-labelledby": "h-exp" }, h("h2", { id: "h-exp" }, "Experiments"), experiments));
  refresh();
  return () => {};
}
