// Building DOM nodes without ever parsing HTML: every string from the API becomes a text
// node (or an attribute value set through setAttribute), so markup in a run's task, a tool's
// arguments or a model's answer is shown as text and never runs.

const SVG_NS = "http://www.w3.org/2000/svg";

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setAttributes(node, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      for (const [key, v] of Object.entries(value)) node.dataset[key] = String(v);
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  return node;
}

/** An HTML element: h("td", {class: "num"}, "42"). */
export function h(tag, attrs, ...children) {
  return append(setAttributes(document.createElement(tag), attrs), children);
}

/** An SVG element, built the same way. */
export function s(tag, attrs, ...children) {
  return append(setAttributes(document.createElementNS(SVG_NS, tag), attrs), children);
}

/** Replace everything inside `node` with `children`. */
export function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** Short readable numbers: 1234 -> "1,234", 1234567 -> "1.23M". */
export function count(n) {
  if (n === null || n === undefined) return "–";
  if (Math.abs(n) >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  return Math.round(n).toLocaleString("en-US");
}

/** US dollars: small amounts keep their digits. */
export function usd(n) {
  if (n === null || n === undefined) return "–";
  if (n === 0) return "$0";
  if (Math.abs(n) < 0.01) return `$${n.toFixed(4)}`;
  return `$${n.toFixed(2)}`;
}

/** Seconds as "850 ms", "12.3 s", "4m 05s", "2h 03m". */
export function seconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "–";
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

/** A percentage of a 0..1 share. */
export function percent(share) {
  if (share === null || share === undefined) return "–";
  return `${(share * 100).toFixed(share === 1 || share === 0 ? 0 : 1)}%`;
}

/** Epoch seconds (or an ISO string) as local date and time. */
export function when(t) {
  if (t === null || t === undefined) return "–";
  const date = typeof t === "number" ? new Date(t * 1000) : new Date(t);
  if (Number.isNaN(date.getTime())) return String(t);
  return date.toLocaleString("en-GB", { dateStyle: "short", timeStyle: "medium" });
}

/** Epoch seconds of a timestamp that may come as a number or an ISO string. */
export function epoch(t) {
  if (t === null || t === undefined) return null;
  if (typeof t === "number") return t;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms / 1000;
}

/** Cut `text` to `n` characters with an ellipsis. */
export function cut(text, n) {
  const str = text === null || text === undefined ? "" : String(text);
  return str.length > n ? `${str.slice(0, n - 1)}…` : str;
}

/** Tool-call arguments (the raw JSON string the model sent) indented when they parse. */
export function prettyJson(raw) {
  if (typeof raw !== "string") return JSON.stringify(raw, null, 2);
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

/** A state badge: <span class="state state-running">RUNNING</span>. */
export function stateBadge(state) {
  const name = String(state || "UNKNOWN");
  return h("span", { class: `state state-${name.toLowerCase()}`, dataset: { state: name } }, name);
}
