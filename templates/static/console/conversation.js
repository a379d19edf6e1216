/* The open conversation: choosing it (the address keeps it, #conversation=<id>), and the
 * actions on it (take over, assign, hand back, resolve, reopen). */

import { $, showError } from "../shared/dom.js";
import { closeSuggestions, updatePreview } from "./canned.js";
import { shortId } from "./format.js";
import { refreshInbox, renderInbox } from "./inbox.js";
import { listen } from "./signals.js";
import { api, conversationPath } from "./client.js";
import { announce, state } from "./state.js";
import { loadTranscript } from "./transcript.js";

function selectConversation(id) {
  const hash = `#conversation=${encodeURIComponent(id)}`;
  if (location.hash !== hash) history.pushState(null, "", hash);
  openConversation(id);
}

export function openFromLocation() {
  const match = /^#conversation=(.+)$/.exec(location.hash);
  if (match) openConversation(decodeURIComponent(match[1]));
  else closeConversation();
}

function saveDrafts() {
  if (!state.selectedId) return;
  state.replyDrafts.set(state.selectedId, $("reply-input").value);
  state.noteDrafts.set(state.selectedId, $("note-input").value);
}

async function openConversation(id) {
  if (!state.token) return;
  if (id !== state.selectedId) {
    // Drafts stay with their conversation, so a reply never goes to the wrong customer.
    saveDrafts();
    state.selectedId = id;
    state.transcript = null;
    state.transcriptNodes.clear();
    state.seenMessageIds = null;
    $("reply-input").value = state.replyDrafts.get(id) || "";
    $("note-input").value = state.noteDrafts.get(id) || "";
    closeSuggestions();
    updatePreview();
    for (const errorId of ["conversation-error", "reply-error", "note-error"]) showError(errorId, "");
    $("transcript").replaceChildren();
    $("conversation-heading").textContent = `Conversation #${shortId(id)}`;
    $("no-selection").hidden = true;
    $("conversation-view").hidden = false;
    for (const row of $("conversation-list").querySelectorAll("button.row")) {
      if (row.dataset.conversationId === id) row.setAttribute("aria-current", "true");
      else row.removeAttribute("aria-current");
    }
    if (window.matchMedia("(max-width: 860px)").matches) $("conversation").scrollIntoView({ block: "start" });
  }
  await loadTranscript({ scrollToEnd: true });
}

function closeConversation() {
  saveDrafts();
  state.selectedId = null;
  state.transcript = null;
  $("conversation-view").hidden = true;
  $("no-selection").hidden = false;
  renderInbox();
}

const ACTIONS = {
  "take-over": { path: "/take-over", done: "You took the conversation over." },
  unassign: { path: "/assign", body: () => ({ agent_id: null }), done: "Unassigned." },
  "hand-back": { path: "/hand-back", done: "Handed back to the bot." },
  resolve: { path: "/resolve", done: "Resolved." },
  reopen: { path: "/reopen", done: "Reopened." },
};

function validActions(t) {
  const mine = t.assignee_id === state.me.id;
  return {
    // Handed off (or someone else's): taking it over makes it yours.
    "take-over": t.status === "bot" || (t.status === "open" && !mine),
    unassign: t.status === "open" && t.assignee_id !== null,
    "hand-back": t.status === "open",
    resolve: t.status !== "resolved",
    reopen: t.status === "resolved",
  };
}

// Shows only the actions that make sense for the conversation as it is.
function renderActions(t) {
  const valid = validActions(t);
  for (const button of $("actions").querySelectorAll("button[data-action]")) {
    button.hidden = !valid[button.dataset.action];
  }
}

async function runAction(name, button) {
  const id = state.selectedId;
  const action = ACTIONS[name];
  if (!id || !action) return;
  showError("conversation-error", "");
  const buttons = [...$("actions").querySelectorAll("button")];
  buttons.forEach((b) => (b.disabled = true));
  try {
    const result = await api(conversationPath(id, action.path), { method: "POST", body: action.body ? action.body() : undefined });
    announce(action.done);
    // Handed back while the bot cannot answer: what the customer wrote meanwhile is still unanswered.
    if (result?.unanswered_reason) showError("conversation-error", result.unanswered_reason);
    await loadTranscript();
    refreshInbox();
  } catch (error) {
    showError("conversation-error", error.detail || String(error));
    loadTranscript();
  } finally {
    buttons.forEach((b) => (b.disabled = false));
    // Keep the keyboard near the actions when the pressed button disappears.
    if (button.hidden) buttons.find((b) => !b.hidden)?.focus();
  }
}

export function bindConversation() {
  listen("conversation-chosen", selectConversation);
  listen("transcript-shown", renderActions);
  $("actions").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (button) runAction(button.dataset.action, button);
  });
  window.addEventListener("popstate", () => state.token && openFromLocation());
}
