/* The open conversation's transcript: loading it, its header facts, and its entries
 * (messages, private notes and the customer's rating in time order), updated in place on a
 * live refresh. */

import { $, debounce, el, showError } from "../shared/dom.js";
import { api, conversationPath } from "./client.js";
import { greetingNode, messageNode, noteNode, ratingEntryNode } from "./entries.js";
import { agentName, customerNode, ratingNode, shortId, shortTime, statusBadge, timeNode } from "./format.js";
import { signal } from "./signals.js";
import { HANDOFF_LABELS, REFRESH_DEBOUNCE_MS, announce, state } from "./state.js";

export async function loadTranscript({ scrollToEnd = false } = {}) {
  const id = state.selectedId;
  if (!id || !state.token) return;
  const seq = ++state.transcriptSeq;
  let transcript;
  try {
    transcript = await api(conversationPath(id));
  } catch (error) {
    if (seq === state.transcriptSeq && state.token) showError("conversation-error", error.detail || String(error));
    return;
  }
  if (seq !== state.transcriptSeq || id !== state.selectedId) return;
  const list = $("transcript");
  const nearEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  state.transcript = transcript;
  renderTranscript(transcript);
  if (scrollToEnd || nearEnd) list.scrollTop = list.scrollHeight;
}

export const refreshTranscript = debounce(() => loadTranscript(), REFRESH_DEBOUNCE_MS);

export function renderTranscript(t) {
  $("conversation-heading").textContent = `Conversation #${shortId(t.id)} · ${t.bot}`;
  $("conversation-heading").title = t.id;
  $("conversation-status").replaceWith(Object.assign(statusBadge(t.status), { id: "conversation-status" }));
  $("conversation-assignee").textContent = t.assignee_id === null ? "Unassigned" : agentName(t.assignee_id);
  const handoff = $("conversation-handoff");
  handoff.replaceChildren(t.handoff_reason ? HANDOFF_LABELS[t.handoff_reason] || t.handoff_reason : "None");
  if (t.handed_off_at) handoff.append(el("span", { class: "muted" }, " at ", timeNode(t.handed_off_at, shortTime)));
  handoff.dataset.reason = t.handoff_reason || "";
  const started = t.messages.length ? t.messages[0].created_at : null;
  $("conversation-started").replaceChildren(started ? timeNode(started, shortTime) : "Not yet");
  $("conversation-customer").replaceChildren(customerNode(t.customer, { withUserId: true }));
  // An address the customer left while the team was away: theirs to give, so never "verified".
  $("conversation-contact-fact").hidden = !t.contact_email;
  $("conversation-contact").replaceChildren(
    ...(t.contact_email ? [t.contact_email, el("span", { class: "identity unverified" }, "Given by the customer, unverified")] : []),
  );
  $("conversation-rating-fact").hidden = !t.rating;
  $("conversation-rating").replaceChildren(...(t.rating ? [ratingNode(t.rating)] : []));
  renderContext(t.context);
  signal("transcript-shown", t); // the actions and the composer follow the conversation's status

  const entries = [
    ...t.messages.map((message) => ({
      at: Date.parse(message.created_at),
      order: 0,
      node: cachedNode(`message-${message.id}`, [message, agentName(message.author_agent_id)], () =>
        messageNode(message),
      ),
    })),
    ...t.notes.map((note) => ({
      at: Date.parse(note.created_at),
      order: 1,
      node: cachedNode(`note-${note.id}`, [note, agentName(note.agent_id)], () => noteNode(note)),
    })),
    ...(t.rating ? [{ at: Date.parse(t.rating.created_at), order: 2, node: ratingEntry(t.rating) }] : []),
  ].sort((a, b) => a.at - b.at || a.order - b.order);
  const greeting = cachedNode("greeting", t.greeting, () => greetingNode(t.greeting));
  const nodes = [greeting, ...entries.map((entry) => entry.node)];
  reconcile($("transcript"), nodes);
  const live = new Set(nodes);
  for (const [key, entry] of state.transcriptNodes) if (!live.has(entry.node)) state.transcriptNodes.delete(key);
  announceNewCustomerMessages(t);
}

const ratingEntry = (rating) => cachedNode("rating", rating, () => ratingEntryNode(rating));

// The entry's node from the last render while its content is the same, else a new one.
function cachedNode(key, content, build) {
  const signature = JSON.stringify(content);
  const cached = state.transcriptNodes.get(key);
  if (cached && cached.signature === signature) return cached.node;
  const node = build();
  state.transcriptNodes.set(key, { signature, node });
  return node;
}

// Puts `nodes` in `parent` in order, moving or adding only what changed.
function reconcile(parent, nodes) {
  let cursor = parent.firstChild;
  for (const node of nodes) {
    if (node === cursor) {
      cursor = cursor.nextSibling;
      continue;
    }
    parent.insertBefore(node, cursor);
  }
  while (cursor) {
    const next = cursor.nextSibling;
    cursor.remove();
    cursor = next;
  }
}

function announceNewCustomerMessages(t) {
  const ids = new Set(t.messages.map((message) => message.id));
  const seen = state.seenMessageIds;
  state.seenMessageIds = ids;
  if (!seen) return;
  for (const message of t.messages) {
    if (!seen.has(message.id) && message.role === "user") {
      announce(`The customer wrote: ${message.text.slice(0, 200)}`);
    }
  }
}

function renderContext(context) {
  const facts = $("conversation-view").querySelector(".facts");
  facts.querySelector(".context-fact")?.remove();
  const pairs = Object.entries(context || {});
  if (!pairs.length) return;
  facts.append(
    el(
      "div",
      { class: "context-fact" },
      el("dt", {}, "Context"),
      el("dd", {}, pairs.map(([key, value]) => `${key}: ${value}`).join(" · ")),
    ),
  );
}
