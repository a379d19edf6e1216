/* The composer under the transcript: the Reply and Private note tabs, sending a reply or
 * adding a note (Enter for both; Shift+Enter adds a line). */

import { $, showError } from "../shared/dom.js";
import { closeSuggestions, onSuggestionKeydown, updatePreview } from "./canned.js";
import { refreshInbox } from "./inbox.js";
import { listen } from "./signals.js";
import { api, conversationPath } from "./client.js";
import { announce, state } from "./state.js";
import { loadTranscript } from "./transcript.js";

const COMPOSER_TABS = {
  reply: { tab: "tab-reply", panel: "reply-form", input: "reply-input" },
  note: { tab: "tab-note", panel: "note-form", input: "note-input" },
};

// Replying is off once the conversation is resolved; the hint says what a reply will do.
function renderComposer(t) {
  const resolved = t.status === "resolved";
  $("reply-input").disabled = resolved;
  $("reply-send").disabled = resolved;
  $("reply-hint").textContent =
    {
      bot: "Replying takes this conversation over from the bot.",
      open: "The bot is silent: the customer is waiting for a person.",
      resolved: "This conversation is resolved: reopen it to reply.",
    }[t.status] || "";
}

async function sendReply() {
  const id = state.selectedId;
  const input = $("reply-input");
  const text = input.value;
  if (!id || !text.trim()) return;
  showError("reply-error", "");
  $("reply-send").disabled = true;
  try {
    await api(conversationPath(id, "/messages"), { method: "POST", body: { text } });
    if (state.selectedId === id) {
      input.value = "";
      state.replyDrafts.delete(id);
      closeSuggestions();
      updatePreview();
    }
    announce("Reply sent.");
    await loadTranscript({ scrollToEnd: true });
    refreshInbox();
  } catch (error) {
    showError("reply-error", error.detail || String(error));
  } finally {
    $("reply-send").disabled = state.transcript?.status === "resolved";
  }
}

async function addNote() {
  const id = state.selectedId;
  const input = $("note-input");
  const text = input.value.trim();
  if (!id || !text) return;
  showError("note-error", "");
  try {
    await api(conversationPath(id, "/notes"), { method: "POST", body: { text } });
    if (state.selectedId === id) input.value = "";
    state.noteDrafts.delete(id);
    announce("Private note added.");
    // Other consoles learn of it from its `note.created` event; this one shows it at once.
    await loadTranscript({ scrollToEnd: true });
  } catch (error) {
    showError("note-error", error.detail || String(error));
  }
}

// Enter sends; Shift+Enter starts a new line; Enter that finishes an IME composition does neither.
function sendsOnEnter(send) {
  return (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  };
}

const sendOnEnter = sendsOnEnter(sendReply);

function onReplyKeydown(event) {
  if (onSuggestionKeydown(event)) return;
  sendOnEnter(event);
}

function selectTab(which) {
  for (const [name, ids] of Object.entries(COMPOSER_TABS)) {
    const selected = name === which;
    $(ids.tab).setAttribute("aria-selected", String(selected));
    $(ids.tab).tabIndex = selected ? 0 : -1;
    $(ids.panel).hidden = !selected;
  }
  if (which !== "reply") closeSuggestions();
}

function bindTabs() {
  for (const [name, ids] of Object.entries(COMPOSER_TABS)) {
    $(ids.tab).addEventListener("click", () => {
      selectTab(name);
      $(ids.input).focus();
    });
  }
  $("tab-reply").parentElement.addEventListener("keydown", (event) => {
    if (!["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key)) return;
    event.preventDefault();
    const current = $("tab-reply").getAttribute("aria-selected") === "true" ? "reply" : "note";
    const next = { ArrowLeft: "reply", Home: "reply", ArrowRight: "note", End: "note" }[event.key] ?? current;
    selectTab(next);
    $(COMPOSER_TABS[next].tab).focus();
  });
}

export function bindComposer() {
  bindTabs();
  listen("transcript-shown", renderComposer);
  $("reply-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sendReply();
  });
  $("reply-input").addEventListener("keydown", onReplyKeydown);
  $("note-form").addEventListener("submit", (event) => {
    event.preventDefault();
    addNote();
  });
  $("note-input").addEventListener("keydown", sendsOnEnter(addNote));
}
