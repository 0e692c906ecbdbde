// Page 1: the runs list, kept current by the live stream of every run's events.

import { ApiError, get } from "./api.js";
import { count, cut, epoch, fill, h, seconds, stateBadge, usd, when } from "./dom.js";
import { follow } from "./live.js";

const STATES = ["PENDING", "RUNNING", "WAITING_TOOL", "PAUSED", "COMPLETED", "FAILED", "CANCELLED"];
const LIVE_TYPES = [
  "run_submitted", "run_started", "step_started", "model_responded", "tool_completed",
  "approval_requested", "approval_decided", "run_waiting", "wait_ended", "handoff", "run_paused",
  "run_resumed", "run_recovered", "run_finished", "run_failed", "run_cancelled",
];
const TERMINAL_TYPES = new Set(["run_finished", "run_failed", "run_cancelled"]);
const COLUMNS = [
  ["Run", "run"], ["State", "state"], ["Agent", "agent"], ["Task type", "task_type"],
  ["Variant", "variant"], ["Step", "step"], ["Tokens", "tokens"], ["Cost", "cost"],
  ["Duration", "duration"],
];

function filtersFromUrl() {
  const q = new URLSearchParams(location.search);
  return { state: q.get("state") || "", agent: q.get("agent") || "", task_type: q.get("task_type") || "" };
}

/** Seconds a run has taken so far (or took). */
export function duration(run, now = Date.now() / 1000) {
  const start = epoch(run.started_at);
  if (start === null) return null;
  const end = epoch(run.finished_at);
  return Math.max(0, (end === null ? now : end) - start);
}

function tokens(run) {
  const u = run.usage || {};
  return (u.input_tokens || 0) + (u.output_tokens || 0);
}

function cell(label, ...children) {
  return h("td", { "data-label": label }, ...children);
}

function row(run) {
  const link = h("a", { href: `/runs/${encodeURIComponent(run.run_id)}`, class: "run-link" },
    h("span", { class: "task" }, cut(run.task, 90)),
    h("span", { class: "id mono" }, run.run_id));
  // A child run names its parent (a link of its own: links do not nest).
  const parent = run.parent_run_id
    ? h("span", { class: "parent muted" }, "child of ", h("a", { href: `/runs/${encodeURIComponent(run.parent_run_id)}`, class: "mono" }, run.parent_run_id))
    : "";
  // What a parked run waits for: an approval, a message, a child run.
  const waits = run.state === "WAITING_TOOL" && run.detail ? h("span", { class: "detail muted" }, cut(run.detail, 80)) : "";
  const d = duration(run);
  return h("tr", { dataset: { runId: run.run_id, state: run.state } },
    cell("Run", link, parent),
    cell("State", stateBadge(run.state), waits),
    cell("Agent", run.agent || "–"),
    cell("Task type", run.task_type || "–"),
    cell("Variant", run.variant ? `${run.experiment || ""}${run.experiment ? ":" : ""}${run.variant}` : "–"),
    h("td", { "data-label": "Step", class: "num", dataset: { col: "step" } },
      run.max_steps ? `${run.step ?? 0} / ${run.max_steps}` : String(run.step ?? 0)),
    h("td", { "data-label": "Tokens", class: "num", dataset: { col: "tokens" } }, count(tokens(run))),
    h("td", { "data-label": "Cost", class: "num", dataset: { col: "cost" } }, usd(run.usage?.cost_usd)),
    h("td", { "data-label": "Duration", class: "num", dataset: { col: "duration", live: run.finished_at ? "" : "1" } },
      seconds(d)),
  );
}

function approvalsPanel(approvals) {
  if (!approvals.length) return [];
  return h("section", { class: "card waiting", "aria-labelledby": "h-waiting" },
    h("h2", { id: "h-waiting" }, `Waiting for approval (${approvals.length})`),
    h("ul", { class: "waiting-list" }, approvals.map((a) => h("li", { dataset: { runId: a.run_id, callId: a.call_id } },
      h("a", { href: `/runs/${encodeURIComponent(a.run_id)}` }, h("strong", { class: "mono" }, a.tool)),
      " ", h("code", { class: "muted" }, cut(a.arguments, 80)),
      a.reason ? h("span", { class: "muted" }, ` — ${cut(a.reason, 120)}`) : "",
      " ", h("span", { class: "muted" }, `(${when(a.requested_at)})`)))));
}

function matches(run, filters) {
  if (filters.state && !filters.state.split(",").includes(run.state)) return false;
  if (filters.agent && run.agent !== filters.agent) return false;
  if (filters.task_type && run.task_type !== filters.task_type) return false;
  return true;
}

function filterForm(filters, onChange) {
  const state = h("select", { id: "f-state", name: "state" },
    h("option", { value: "" }, "any state"),
    STATES.map((s) => h("option", { value: s, selected: filters.state === s }, s)));
  const agent = h("input", { id: "f-agent", name: "agent", value: filters.agent, placeholder: "any", autocomplete: "off" });
  const taskType = h("input", { id: "f-task-type", name: "task_type", value: filters.task_type, placeholder: "any", autocomplete: "off" });
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter runs" },
    h("label", { for: "f-state" }, "State", state),
    h("label", { for: "f-agent" }, "Agent", agent),
    h("label", { for: "f-task-type" }, "Task type", taskType),
    h("button", { type: "submit" }, "Filter"),
    h("button", { type: "reset", class: "secondary" }, "Clear"));
  const read = () => ({ state: state.value, agent: agent.value.trim(), task_type: taskType.value.trim() });
  state.addEventListener("change", () => onChange(read()));
  form.addEventListener("submit", (e) => { e.preventDefault(); onChange(read()); });
  form.addEventListener("reset", () => setTimeout(() => onChange(read()), 0));
  return form;
}

/** Mount the runs list in `main`; returns its cleanup. */
export function mountRuns(main) {
  let filters = filtersFromUrl();
  const runs = new Map();
  const tbody = h("tbody");
  const status = h("p", { class: "muted live-status", role: "status", "aria-live": "polite" });
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Load more");
  const empty = h("p", { class: "muted", hidden: true }, "No runs match.");
  const waiting = h("div");
  let approvalsTimer = null;
  const loadApprovals = () => {
    clearTimeout(approvalsTimer);
    approvalsTimer = setTimeout(async () => {
      try {
        fill(waiting, approvalsPanel((await get("/api/approvals")).approvals));
      } catch {
        // the runs table says what failed; the panel stays as it was
      }
    }, 250);
  };
  let cursor = null;
  const pending = new Map();

  const table = h("table", { class: "runs" },
    h("caption", { class: "sr-only" }, "Runs, newest first"),
    h("thead", {}, h("tr", {}, COLUMNS.map(([label, key]) => h("th", { scope: "col", dataset: { col: key } }, label)))),
    tbody);

  function put(run, prepend) {
    const fresh = row(run);
    const old = runs.get(run.run_id);
    runs.set(run.run_id, { run, tr: fresh });
    if (old) old.tr.replaceWith(fresh);
    else if (prepend) tbody.prepend(fresh);
    else tbody.append(fresh);
    empty.hidden = runs.size > 0;
  }

  async function load(reset) {
    const params = { ...filters, limit: 50, cursor: reset ? null : cursor };
    try {
      const page = await get("/api/runs", params);
      if (reset) { runs.clear(); fill(tbody); }
      for (const run of page.runs) put(run, false);
      cursor = page.next_cursor;
      more.hidden = !cursor;
      empty.hidden = runs.size > 0;
    } catch (error) {
      status.textContent = `Could not load runs: ${error.message}`;
    }
  }

  // Events arrive in bursts: one GET per run at most every 250 ms.
  function refresh(runId, isNew) {
    if (pending.has(runId)) return;
    pending.set(runId, setTimeout(async () => {
      pending.delete(runId);
      try {
        const run = await get(`/api/runs/${encodeURIComponent(runId)}`);
        if (matches(run, filters)) put(run, isNew && !runs.has(runId));
        else if (runs.has(runId)) { runs.get(runId).tr.remove(); runs.delete(runId); }
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 404)) status.textContent = error.message;
      }
    }, 250));
  }

  const stop = follow("/api/events?types=" + LIVE_TYPES.join(","), {
    types: LIVE_TYPES,
    onEvent: (env) => {
      if (runs.has(env.run_id) || env.type === "run_submitted") refresh(env.run_id, env.type === "run_submitted");
      if (env.type.startsWith("approval_") || TERMINAL_TYPES.has(env.type)) loadApprovals();
    },
    onStatus: (s) => {
      // The all-runs stream starts at the moment of connecting: after a gap, read the list again.
      if (s === "live" && status.dataset.live === "reconnecting") { load(true); loadApprovals(); }
      status.dataset.live = s;
      status.textContent = s === "live" ? "Live: updates as runs change." : "Reconnecting to the live stream…";
    },
  });

  const tick = setInterval(() => {
    for (const { run, tr } of runs.values()) {
      if (run.finished_at || !run.started_at) continue;
      const td = tr.querySelector('[data-col="duration"]');
      if (td) td.textContent = seconds(duration(run));
    }
  }, 1000);

  more.addEventListener("click", () => load(false));

  const onChange = (next) => {
    filters = next;
    const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    history.replaceState(null, "", q.toString() ? `/?${q}` : "/");
    load(true);
  };

  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, "Runs"), status),
    waiting,
    filterForm(filters, onChange),
    h("div", { class: "table-wrap" }, table),
    empty, more);
  load(true);
  loadApprovals();

  return () => {
    stop();
    clearTimeout(approvalsTimer);
    clearInterval(tick);
    for (const t of pending.values()) clearTimeout(t);
  };
}
