// Page 2: one run, live — its state and budget, the timeline, the final answer, the message
// history and the trace waterfall; controls for an operator (pause, resume, cancel, approve,
// deny, a message to the run), hidden for a read-only role.

import { ApiError, canOperate, get, me, post } from "./api.js";
import { count, fill, h, seconds, stateBadge, usd, when } from "./dom.js";
import { follow } from "./live.js";
import { duration } from "./runs.js";
import { runLink, Timeline } from "./timeline.js";
import { waterfall } from "./trace.js";

const TERMINAL = new Set(["COMPLETED", "FAILED", "CANCELLED"]);
const CAN = {
  pause: new Set(["PENDING", "RUNNING", "WAITING_TOOL"]),
  resume: new Set(["PAUSED", "FAILED", "CANCELLED"]),
  cancel: new Set(["PENDING", "RUNNING", "WAITING_TOOL", "PAUSED"]),
};

function fact(label, value, key) {
  return [h("dt", {}, label), h("dd", { dataset: { fact: key } }, value)];
}

function budget(run, maxSteps) {
  const u = run.usage || {};
  const step = run.step ?? 0;
  run = { ...run, max_steps: run.max_steps ?? maxSteps };
  const rows = [
    fact("Step", run.max_steps ? `${step} of ${run.max_steps}` : String(step), "step"),
    fact("Steps left", run.max_steps ? String(Math.max(0, run.max_steps - step)) : "–", "steps-left"),
    fact("Tokens", `${count(u.input_tokens)} in · ${count(u.output_tokens)} out`, "tokens"),
    fact("Model calls", count(u.requests), "requests"),
    fact("Tool calls", count(u.tool_calls), "tool-calls"),
    fact("Cost", usd(u.cost_usd), "cost"),
    fact("Duration", seconds(duration(run)), "duration"),
  ];
  const limits = run.limits || {};
  if (limits.max_tokens) {
    const used = (u.input_tokens || 0) + (u.output_tokens || 0);
    rows.push(fact("Tokens left", count(Math.max(0, limits.max_tokens - used)), "tokens-left"));
  }
  if (limits.max_cost_usd) rows.push(fact("Budget left", usd(Math.max(0, limits.max_cost_usd - (u.cost_usd || 0))), "budget-left"));
  if (limits.max_seconds) rows.push(fact("Time left", seconds(Math.max(0, limits.max_seconds - (duration(run) || 0))), "time-left"));
  if (limits.max_tool_calls) rows.push(fact("Tool calls left", count(Math.max(0, limits.max_tool_calls - (u.tool_calls || 0))), "tool-calls-left"));
  const c = run.children_usage || {};
  if (c.requests) {  // what its child runs consumed: apart from its own usage, never in it
    rows.push(fact("Child runs used", `${count((c.input_tokens || 0) + (c.output_tokens || 0))} tokens · ${usd(c.cost_usd)}`, "children"));
  }
  return rows;
}

function header(run) {
  return [
    h("p", { class: "crumbs" }, h("a", { href: "/" }, "Runs"), " / ", h("span", { class: "mono" }, run.run_id)),
    h("h1", { class: "run-task" }, run.task || "(no task)"),
    h("p", { class: "run-meta" }, stateBadge(run.state), " ",
      h("span", {}, `agent ${run.agent || "–"}`), " · ", h("span", {}, `model ${run.model || "–"}`),
      run.task_type ? ` · task type ${run.task_type}` : "",
      run.variant ? ` · ${run.experiment || "experiment"} variant ${run.variant}` : "",
      ` · created ${when(run.created_at)}`,
      run.resumed_from ? [" · from ", runLink(run.resumed_from)] : "",
      run.parent_run_id ? [" · child of ", runLink(run.parent_run_id)] : ""),
    run.state === "WAITING_TOOL" && run.detail ? h("p", { class: "run-detail", dataset: { fact: "detail" } }, run.detail) : "",
  ];
}

function outcome(run) {
  if (run.state === "COMPLETED" || run.result) {
    return [h("h2", {}, "Final answer"), h("pre", { class: "answer", dataset: { termination: run.termination || "" } }, run.result ?? "(none)"),
      run.termination ? h("p", { class: "muted" }, `Termination: ${run.termination}`) : ""];
  }
  if (run.state === "FAILED") {
    return [h("h2", {}, "Failed"), h("pre", { class: "answer error" }, run.error || run.detail || "(no error text)"),
      h("p", { class: "muted" }, `Termination: ${run.termination || "–"}`)];
  }
  if (run.state === "CANCELLED") return [h("h2", {}, "Cancelled"), h("p", { class: "muted" }, run.detail || "")];
  return [h("h2", {}, "Final answer"), h("p", { class: "muted" }, "Not yet: the run is still going.")];
}

function messageView(m, i) {
  const calls = (m.tool_calls || []).map((c) => h("li", {}, h("strong", { class: "mono" }, c.name), " ",
    h("code", { class: "muted" }, c.id), h("pre", {}, c.arguments)));
  return h("li", { class: `msg msg-${m.role}` },
    h("details", { open: m.role !== "system" },
      h("summary", {}, h("span", { class: "badge" }, m.role), ` #${i + 1}`, m.tool_call_id ? ` → ${m.tool_call_id}` : ""),
      m.reasoning ? h("pre", { class: "reasoning" }, m.reasoning) : "",
      m.content ? h("pre", {}, m.content) : "",
      calls.length ? h("ul", { class: "msg-calls" }, calls) : ""));
}

/** Mount the page of run `runId` in `main`; returns its cleanup. */
export function mountRun(main, runId) {
  const path = `/api/runs/${encodeURIComponent(runId)}`;
  let run = null;
  let role = "read";
  let refreshTimer = null;
  let stopped = false;
  const head = h("div", { class: "run-head" });
  const controls = h("div", { class: "controls", role: "group", "aria-label": "Run controls" });
  const feedback = h("p", { class: "feedback", role: "status", "aria-live": "polite" });
  const facts = h("dl", { class: "facts", "aria-label": "Progress and budget" });
  const live = h("p", { class: "muted live-status", role: "status" });
  const timelineRoot = h("div");
  const answer = h("section", { class: "card", "aria-label": "Final answer", id: "answer" });
  const messages = h("ol", { class: "messages" });
  const trace = h("div", { class: "waterfall-wrap" });

  const decide = async (callId, decision, reason, box) => {
    for (const b of box.querySelectorAll("button")) b.disabled = true;
    try {
      await post(`${path}/approvals/${encodeURIComponent(callId)}`, reason ? { decision, reason } : { decision });
      feedback.textContent = `${decision === "approve" ? "Approved" : "Denied"} ${callId}.`;
    } catch (error) {
      feedback.textContent = `Could not ${decision} ${callId}: ${error.message}`;
      for (const b of box.querySelectorAll("button")) b.disabled = false;
    }
  };

  const approvalControls = (p) => {
    if (!canOperate(role)) return h("p", { class: "muted" }, "Waiting for an operator to approve or deny.");
    const id = `reason-${p.call_id}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const reason = h("input", { id, type: "text", placeholder: "optional" });
    const box = h("div", { class: "approval" });
    box.append(
      h("label", { for: id }, "Reason"), reason,
      h("button", { type: "button", class: "approve", onclick: () => decide(p.call_id, "approve", reason.value.trim(), box) }, "Approve"),
      h("button", { type: "button", class: "deny danger", onclick: () => decide(p.call_id, "deny", reason.value.trim(), box) }, "Deny"));
    return box;
  };

  const timeline = new Timeline(timelineRoot, { approvalControls });

  // Built once (the controls are rebuilt on every refresh): what is being typed stays.
  const note = h("textarea", { id: "send-text", rows: 2, maxlength: 20000, placeholder: "It reads it at its next step" });
  const sendButton = h("button", { type: "submit", class: "secondary" }, "Send message");
  const sendBox = h("form", { class: "send-box", hidden: true, onsubmit: (event) => { event.preventDefault(); sendMessage(); } },
    h("label", { for: "send-text" }, "Message to the run"), note, sendButton);

  async function sendMessage() {
    const content = note.value;
    if (!content.trim()) { feedback.textContent = "Write a message first."; return; }
    sendButton.disabled = true;
    try {
      const answer = await post(`${path}/messages`, { content });
      feedback.textContent = `Message ${answer.message_id} sent: the run reads it at its next step.`;
      note.value = "";
    } catch (error) {
      feedback.textContent = `Could not send the message: ${error.message}`;
    }
    sendButton.disabled = false;
  }

  async function act(verb) {
    const button = controls.querySelector(`[data-action="${verb}"]`);
    if (button) button.disabled = true;
    try {
      const answer = await post(`${path}/${verb}`);
      feedback.textContent = `${verb} requested.`;
      if (verb === "resume" && answer?.run_id && answer.run_id !== runId) {
        feedback.textContent = "Resumed as a new run: ";
        feedback.append(h("a", { href: `/runs/${encodeURIComponent(answer.run_id)}` }, answer.run_id));
      }
    } catch (error) {
      feedback.textContent = error instanceof ApiError && error.status === 409
        ? `Cannot ${verb}: ${error.message}` : `Could not ${verb}: ${error.message}`;
    }
    refresh();
  }

  function renderControls() {
    sendBox.hidden = !canOperate(role) || !run || TERMINAL.has(run.state);
    if (!canOperate(role)) {
      fill(controls, h("p", { class: "muted" }, "Read-only: your token cannot steer runs."));
      return;
    }
    const button = (verb, label, cls) => h("button", {
      type: "button", class: cls, dataset: { action: verb },
      disabled: !run || !CAN[verb].has(run.state), onclick: () => act(verb),
    }, label);
    const resumeLabel = run && (run.state === "FAILED" || run.state === "CANCELLED") ? "Resume as new run" : "Resume";
    fill(controls, button("pause", "Pause", "secondary"), button("resume", resumeLabel, "secondary"), button("cancel", "Cancel", "danger"));
  }

  function render() {
    fill(head, ...header(run));
    fill(facts, ...budget(run, timeline.maxSteps));
    fill(answer, ...outcome(run));
    renderControls();
    document.title = `${run.state} · ${run.task || run.run_id} · harness`;
  }

  async function refresh() {
    try {
      const wasTerminal = run && TERMINAL.has(run.state);
      run = await get(path);
      if (stopped) return;
      render();
      if (TERMINAL.has(run.state) && !wasTerminal) { loadMessages(); loadTrace(); }
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        fill(main, h("h1", {}, "No such run"), h("p", {}, `There is no run ${runId}.`), h("a", { href: "/" }, "Back to the runs"));
        stopped = true;
        stopStream();
      } else feedback.textContent = `Could not load the run: ${error.message}`;
    }
  }

  function soon() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => { refreshTimer = null; refresh(); }, 200);
  }

  async function loadMessages() {
    try {
      const data = await get(`${path}/messages`);
      fill(messages, ...data.messages.map(messageView));
    } catch (error) {
      fill(messages, h("li", { class: "muted" }, `Could not load messages: ${error.message}`));
    }
  }

  async function loadTrace() {
    try {
      fill(trace, waterfall(await get(`${path}/trace`)));
    } catch (error) {
      fill(trace, h("p", { class: "muted" }, `Could not load the trace: ${error.message}`));
    }
  }

  let stopStream = () => {};
  const startStream = () => {
    if (stopped) return;
    stopStream = follow(`${path}/events`, {
      onEvent: (env) => { if (timeline.add(env)) soon(); },
      onStatus: (s) => {
        live.dataset.live = s;
        live.textContent = { live: "Live", ended: "The run has ended.", reconnecting: "Reconnecting…", closed: "Disconnected." }[s] || s;
      },
    });
  };

  const tick = setInterval(() => {
    if (run && !run.finished_at && run.started_at) {
      const dd = facts.querySelector('[data-fact="duration"]');
      if (dd) dd.textContent = seconds(duration(run));
    }
  }, 1000);

  const section = (title, id, ...children) =>
    h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...children);

  fill(main,
    head,
    h("div", { class: "run-grid" },
      h("div", { class: "run-main" },
        section("Timeline", "h-timeline", live, timelineRoot),
        answer),
      h("aside", { class: "run-side" },
        section("Controls", "h-controls", controls, sendBox, feedback),
        section("Progress and budget", "h-budget", facts))),
    section("Trace", "h-trace", h("button", { type: "button", class: "secondary small", onclick: loadTrace }, "Refresh trace"), trace),
    section("Message history", "h-messages", h("button", { type: "button", class: "secondary small", onclick: loadMessages }, "Refresh messages"), messages));

  // The role decides whether a waiting call shows buttons: know it before the events come.
  me().then((who) => { role = who.role; if (run) renderControls(); }).catch(() => {}).finally(startStream);
  refresh();
  loadMessages();
  loadTrace();

  return () => {
    stopped = true;
    stopStream();
    clearInterval(tick);
    clearTimeout(refreshTimer);
  };
}
