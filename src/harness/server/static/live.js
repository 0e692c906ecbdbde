// Server-Sent Events with the dashboard's habits: named event types, a callback per
// envelope, and a status line that says whether the stream is live.

/** Event types a run's stream carries (the envelope's `type`). */
export const EVENT_TYPES = [
  "run_submitted", "run_started", "step_started", "model_called", "model_responded",
  "model_retry", "model_fallback", "agent_message", "tool_started", "tool_completed",
  "approval_requested", "approval_decided", "context_compacted", "completion_checked",
  "hint_injected", "plan_created", "plan_updated", "run_waiting", "run_paused", "run_resumed",
  "run_recovered", "run_finished", "run_failed", "run_cancelled", "handoff", "wait_ended",
  "message_sent", "message_received", "child_started", "child_finished", "trigger_fired",
];

/**
 * Follow `url`; call `onEvent(envelope)` for each event, `onStatus("live"|"reconnecting"|
 * "ended")` when that changes. Returns a function that closes the stream.
 */
export function follow(url, { onEvent, onStatus = () => {}, types = EVENT_TYPES }) {
  const source = new EventSource(url, { withCredentials: true });
  const seen = new Set();
  const handle = (message) => {
    if (message.lastEventId && seen.has(message.lastEventId)) return;
    if (message.lastEventId) seen.add(message.lastEventId);
    let envelope;
    try {
      envelope = JSON.parse(message.data);
    } catch {
      return;
    }
    onEvent(envelope);
  };
  for (const type of types) source.addEventListener(type, handle);
  source.addEventListener("message", handle);
  source.addEventListener("end", () => {
    source.close();
    onStatus("ended");
  });
  source.addEventListener("open", () => onStatus("live"));
  source.addEventListener("error", () => {
    onStatus(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
  });
  return () => source.close();
}
