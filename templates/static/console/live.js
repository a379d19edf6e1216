/* Live events: the agents' event stream keeps the inbox and the open transcript current (a
 * customer's rating of a reply or of the conversation, and colleagues' notes included), alerts on
 * a new handoff, and the badge in the top bar says whether it is up. */

import { $ } from "../shared/dom.js";
import { followEvents } from "../shared/sse.js";
import { alertHandoff } from "./alerts.js";
import { refreshInbox } from "./inbox.js";
import { signal } from "./signals.js";
import { FEEDBACK_LABELS, MAX_RATING, announce, state } from "./state.js";
import { refreshTranscript } from "./transcript.js";

function setLive(stateName, text) {
  const node = $("live-state");
  node.dataset.state = stateName;
  node.textContent = text;
}

export function startEvents() {
  stopEvents();
  const controller = new AbortController();
  state.stream = controller;
  followEvents("/api/v1/events", {
    headers: { Authorization: `Bearer ${state.token}` },
    signal: controller.signal,
    onRefused,
    onOpen() {
      setLive("live", "Live");
      // Whatever happened while the stream was down (or before it was up) arrived as no event.
      refreshInbox();
      if (state.selectedId) refreshTranscript();
    },
    onEvent: dispatch,
    onRetry: (wait) => setLive("reconnecting", `Reconnecting in ${Math.round(wait / 1000)} s…`),
  });
}

export function stopEvents() {
  state.stream?.abort();
  state.stream = null;
  setLive("offline", "Offline");
}

// A 401 means the token was revoked: the session ends. Other refusals are retried.
async function onRefused(response) {
  if (response.status !== 401) return false;
  let detail = "this token is no longer valid";
  try {
    detail = (await response.json()).detail || detail;
  } catch {
    // keep the generic text
  }
  signal("unauthorized", `Signed out: ${detail}`);
  return true;
}

function dispatch(type, raw) {
  let event;
  try {
    event = JSON.parse(raw);
  } catch {
    return;
  }
  onEvent(event.type || type, event);
}

function onEvent(type, event) {
  const id = event.conversation_id;
  if (type === "message.feedback") {
    // The inbox does not show ratings: only the open transcript changes.
    if (!id || id !== state.selectedId) return;
    const rating = FEEDBACK_LABELS[event.data?.feedback];
    announce(rating ? `The customer rated a reply: ${rating}.` : "The customer took back a rating.");
    refreshTranscript();
    return;
  }
  if (type === "note.created") {
    // A colleague's private note: only the open transcript shows notes.
    if (id && id === state.selectedId) refreshTranscript();
    return;
  }
  if (type === "conversation.rated" && id && id === state.selectedId) {
    announce(`The customer rated this conversation ${event.data?.score} of ${MAX_RATING}.`);
  }
  if (type === "conversation.handoff_requested") {
    state.wantsPerson.add(id);
    announce("A customer asked for a person.");
    alertHandoff(id, event.data?.reason);
  } else if (type === "conversation.status_changed") {
    const data = event.data || {};
    if (data.status !== "open" || data.assignee_id !== null) state.wantsPerson.delete(id);
  }
  refreshInbox();
  if (id && id === state.selectedId) refreshTranscript();
}
