// The live timeline of one run (the seed's §4.4): each step, its model call (tokens,
// latency), each tool call with its arguments, status and 200-character summary, and the
// run's own moments (started, paused, finished). Built incrementally: an event adds a node or
// updates the one it belongs to, so what the reader opened stays open while the run goes on.

import { count, cut, fill, h, prettyJson, seconds, usd, when } from "./dom.js";

function usageLine(usage) {
  if (!usage) return "";
  const parts = [`${count(usage.input_tokens)} in`, `${count(usage.output_tokens)} out`];
  if (usage.cached_tokens) parts.push(`${count(usage.cached_tokens)} cached`);
  if (usage.reasoning_tokens) parts.push(`${count(usage.reasoning_tokens)} reasoning`);
  if (usage.cost_usd) parts.push(usd(usage.cost_usd));
  return parts.join(" · ");
}

/** A link to the run page of `runId`, showing its id. */
export function runLink(runId) {
  return h("a", { href: `/runs/${encodeURIComponent(runId)}`, class: "mono run-ref" }, runId);
}

function note(kind, ts, ...text) {
  return h("li", { class: `note note-${kind}`, dataset: { kind } },
    h("time", { class: "muted" }, when(ts)), " ", ...text);
}

/** A timeline in `root` (a <div>); `actions` renders the approve/deny controls of a call. */
export class Timeline {
  constructor(root, { approvalControls }) {
    this.root = root;
    this.approvalControls = approvalControls;
    this.list = h("ol", { class: "timeline", "aria-label": "Timeline" });
    this.steps = new Map();
    this.models = new Map();
    this.calls = new Map();
    this.lastSeq = 0;
    this.currentStep = 0;
    fill(root, this.list);
  }

  step(n) {
    let entry = this.steps.get(n);
    if (!entry) {
      const items = h("ol", { class: "step-items" });
      const head = h("h3", {}, n === 0 ? "Before the first step" : `Step ${n}`);
      const el = h("li", { class: "step", dataset: { step: n } }, head, items);
      entry = { el, items, head };
      this.steps.set(n, entry);
      this.list.append(el);
    }
    return entry;
  }

  /** Add one event envelope {run_id, seq, ts, type, payload}; older seqs are ignored. */
  add(env) {
    if (env.seq && env.seq <= this.lastSeq) return false;
    if (env.seq) this.lastSeq = env.seq;
    const p = env.payload || {};
    const handler = HANDLERS[env.type];
    if (handler) handler.call(this, p, env);
    else if (env.type !== "model_delta") this.list.append(note("other", env.ts, env.type));
    return true;
  }

  in(p) {
    return this.step(p.step ?? this.currentStep).items;
  }

  callRow(p, env) {
    let call = this.calls.get(p.call_id);
    if (call) return call;
    const status = h("span", { class: "call-status", dataset: { status: "running" } }, "running");
    const summary = h("pre", { class: "summary", hidden: true });
    const meta = h("span", { class: "muted call-meta" });
    const actions = h("div", { class: "call-actions" });
    const el = h("li", { class: "call", dataset: { callId: p.call_id, tool: p.tool } },
      h("div", { class: "call-head" }, h("span", { class: "badge tool" }, "tool"),
        h("strong", { class: "mono" }, p.tool), status, meta),
      h("details", { class: "args" }, h("summary", {}, "arguments ", h("code", { class: "muted" }, cut(p.arguments, 80))),
        h("pre", {}, prettyJson(p.arguments))),
      summary, actions);
    call = { el, status, summary, meta, actions, child: null, started: env.ts };
    this.calls.set(p.call_id, call);
    this.in(p).append(el);
    return call;
  }
}

function setStatus(call, status, text) {
  call.status.dataset.status = status;
  call.status.textContent = text || status;
}

const HANDLERS = {
  run_submitted(p, env) {
    this.list.append(note("submitted", env.ts, "Submitted to ", h("strong", {}, p.agent || "–"),
      p.task_type ? ` (task type ${p.task_type})` : "", p.variant ? `, variant ${p.variant}` : ""));
  },
  run_started(p, env) {
    this.maxSteps = p.max_steps;
    // After a handoff the run starts again under the agent it was handed to.
    const how = this.handedOff ? ["Continues as ", h("strong", {}, p.agent || "–"), " on "] : ["Started on "];
    this.list.append(note("started", env.ts, ...how, h("strong", {}, p.model || "–"),
      ` with ${p.tools?.length ?? 0} tools, at most ${p.max_steps} steps`));
  },
  step_started(p) {
    this.currentStep = p.step;
    const entry = this.step(p.step);
    if (p.wrap_up) entry.head.append(" ", h("span", { class: "badge warn" }, "wrap-up"), p.reason ? ` ${p.reason}` : "");
  },
  model_called(p, env) {
    const stats = h("span", { class: "muted model-stats" }, "waiting for the model…");
    const content = h("pre", { class: "content", hidden: true });
    const el = h("li", { class: "model", dataset: { step: p.step, state: "calling" } },
      h("div", {}, h("span", { class: "badge model" }, "model"), " ", h("strong", {}, p.model), " ",
        h("span", { class: "muted" }, `${p.messages} messages`), " ", stats), content);
    this.models.set(p.step, { el, stats, content, ts: env.ts });
    this.in(p).append(el);
  },
  model_responded(p) {
    let m = this.models.get(p.step);
    if (!m) { HANDLERS.model_called.call(this, { step: p.step, model: p.model, messages: "?" }, {}); m = this.models.get(p.step); }
    m.el.dataset.state = "responded";
    m.stats.textContent = `${usageLine(p.usage)} · ${seconds(p.duration_s)} · ${p.finish_reason}`;
    m.stats.dataset.latency = String(p.duration_s);
    m.stats.dataset.inputTokens = String(p.usage?.input_tokens ?? 0);
    m.stats.dataset.outputTokens = String(p.usage?.output_tokens ?? 0);
    if (p.content) { m.content.hidden = false; m.content.textContent = p.content; }
  },
  model_retry(p, env) {
    this.in(p).append(note("retry", env.ts, `Model retry ${p.attempt}/${p.max_attempts}`,
      p.status ? ` (HTTP ${p.status})` : "", p.message ? `: ${cut(p.message, 200)}` : "", ` in ${seconds(p.delay_s)}`));
  },
  model_fallback(p, env) {
    this.in(p).append(note("fallback", env.ts, `Fell back from ${p.from_model} to ${p.to_model}: ${p.reason}`));
  },
  agent_message(p) {
    if (p.final) return; // shown as the final answer
    if (p.content) this.in(p).append(h("li", { class: "message" }, h("span", { class: "badge" }, "said"), " ", cut(p.content, 400)));
  },
  tool_started(p, env) {
    this.callRow(p, env);
  },
  approval_requested(p, env) {
    const call = this.callRow(p, env);
    setStatus(call, "waiting", "waiting for approval");
    call.el.dataset.waiting = "1";
    fill(call.actions, this.approvalControls(p));
    if (p.reason) call.actions.prepend(h("p", { class: "muted" }, `Why: ${p.reason}`));
  },
  approval_decided(p) {
    const call = this.calls.get(p.call_id);
    if (!call) return;
    delete call.el.dataset.waiting;
    fill(call.actions, h("p", { class: "muted" }, `${p.approved ? "Approved" : "Denied"} by ${p.by || "–"}`,
      p.reason ? `: ${p.reason}` : ""));
    setStatus(call, p.approved ? "running" : "denied", p.approved ? "running" : "denied");
  },
  tool_completed(p, env) {
    const call = this.callRow(p, env);
    delete call.el.dataset.waiting;
    if (call.actions.querySelector("button")) fill(call.actions);
    setStatus(call, p.ok ? "ok" : "failed", p.status);
    call.meta.textContent = seconds(p.duration_s) + (p.truncated ? " · result cut" : "");
    call.summary.hidden = false;
    call.summary.textContent = p.result;
  },
  context_compacted(p, env) {
    this.in(p).append(note("compacted", env.ts, `Context ${p.tier}: ${count(p.tokens_before)} → ${count(p.tokens_after)} tokens`,
      p.messages_removed ? `, ${p.messages_removed} messages removed` : ""));
  },
  completion_checked(p, env) {
    this.in(p).append(note("check", env.ts, `Check ${p.check}: ${p.passed ? "passed" : "failed"}`,
      p.feedback ? ` — ${cut(p.feedback, 200)}` : ""));
  },
  hint_injected(p, env) {
    this.in(p).append(note("hint", env.ts, `Hint: ${cut(p.hint, 200)}`));
  },
  plan_created(p) {
    this.in(p).append(h("li", { class: "plan" }, h("span", { class: "badge" }, "plan"),
      h("ol", {}, (p.steps || []).map((s) => h("li", {}, s)))));
  },
  plan_updated(p, env) {
    this.in(p).append(note("plan", env.ts, `Plan revised (${p.revision})`, p.reason ? `: ${cut(p.reason, 200)}` : ""));
  },
  run_waiting(p, env) {
    const reason = String(p.reason ?? "");
    const text = /^waiting /i.test(reason) ? reason[0].toUpperCase() + reason.slice(1) : `Waiting for ${reason}`;
    this.in(p).append(note("waiting", env.ts, text));
  },
  handoff(p, env) {
    this.handedOff = true;
    this.in(p).append(note("handoff", env.ts, "Handed over from ", h("strong", {}, p.from_agent),
      " to ", h("strong", {}, p.to_agent), p.reason ? `: ${cut(p.reason, 200)}` : ""));
  },
  // A child run belongs to the agent-tool call that started it: shown in that call's row,
  // with a link to the child's own page.
  child_started(p, env) {
    const line = h("p", { class: "child", dataset: { childRunId: p.child_run_id, state: "started" } },
      h("span", { class: "badge" }, "child run"), " ", runLink(p.child_run_id),
      ` · agent ${p.agent} · depth ${p.depth}`, p.existed ? " · started before, waited for again" : "",
      h("span", { class: "child-state muted" }));
    const call = this.calls.get(p.call_id);
    if (!call) { this.list.append(h("li", { class: "note note-child" }, h("time", { class: "muted" }, when(env.ts)), " ", line)); return; }
    call.child = line;
    call.el.insertBefore(line, call.summary);
  },
  child_finished(p) {
    const line = this.calls.get(p.call_id)?.child
      ?? this.list.querySelector(`.child[data-child-run-id="${CSS.escape(p.child_run_id)}"]`);
    const text = ` · ${String(p.state).toLowerCase()}${p.termination ? ` (${p.termination})` : ""} · ${usageLine(p.usage)}`;
    if (!line) { this.list.append(note("child", null, "Child run ", runLink(p.child_run_id), text)); return; }
    line.dataset.state = p.state;
    line.querySelector(".child-state").textContent = text;
  },
  trigger_fired(p, env) {
    this.list.append(note("trigger", env.ts, "Started by the trigger ", h("strong", {}, p.trigger),
      ` on ${p.source_event} #${p.source_seq} of `, runLink(p.source_run_id)));
  },
  wait_ended(p, env) {
    this.in(p).append(note("resumed", env.ts, `Waited ${seconds(p.waited_s)}: ${p.reason}`));
  },
  message_sent(p, env) {
    this.in(p).append(note("message", env.ts, `Message to ${p.to_run}: ${cut(p.content, 200)}`));
  },
  message_received(p, env) {
    const from = p.sender_run ? `${p.sender_run} (agent ${p.sender})` : p.sender;
    this.in(p).append(note("message", env.ts, `Message from ${from}: ${cut(p.content, 200)}`));
  },
  run_paused(p, env) { this.list.append(note("paused", env.ts, `Paused (${p.at})`)); },
  run_resumed(p, env) { this.list.append(note("resumed", env.ts, "Resumed")); },
  run_recovered(p, env) {
    this.list.append(note("recovered", env.ts, `Recovered by ${p.owner}`, p.previous_owner ? ` from ${p.previous_owner}` : ""));
  },
  run_finished(p, env) {
    this.list.append(note("finished", env.ts, h("strong", {}, "Finished"), `: ${p.termination}`,
      p.usage ? ` · ${usageLine(p.usage)}` : ""));
  },
  run_failed(p, env) {
    this.list.append(note("failed", env.ts, h("strong", {}, "Failed"), `: ${p.termination}`,
      p.error ? ` — ${cut(p.error, 300)}` : ""));
  },
  run_cancelled(p, env) {
    this.list.append(note("cancelled", env.ts, h("strong", {}, "Cancelled"),
      p.by ? ` by ${p.by}` : "", p.reason ? `: ${p.reason}` : ""));
  },
};
