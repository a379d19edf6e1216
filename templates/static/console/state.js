/* The console's state, its constants, and the labels it shows.
 *
 * One mutable `state` object, shared by the other modules: who is signed in, the inbox page
 * on screen, the open conversation, drafts, and the live stream.
 */

import { $ } from "../shared/dom.js";

export const TOKEN_KEY = "prefixdesk.console.token";
// Whether this browser plays a sound and shows a desktop notification on a new handoff.
export const ALERTS_KEY = "prefixdesk.console.alerts";
export const PAGE_SIZE = 25;
export const REFRESH_DEBOUNCE_MS = 250;
export const SEARCH_DEBOUNCE_MS = 300;
export const STATUS_LABELS = { bot: "With the bot", open: "Open", resolved: "Resolved" };
export const ROLE_LABELS = { user: "Customer", assistant: "Bot", agent: "Agent" };
export const FEEDBACK_LABELS = { up: "Helpful", down: "Not helpful" };
// Customers rate a resolved conversation 1 to 5; this or lower is a poor rating, flagged.
export const MAX_RATING = 5;
export const LOW_RATING = 2;
// A message's status is tagged only when it is unusual; a complete message needs no tag.
export const UNUSUAL_STATUS_LABELS = { generating: "streaming", failed: "failed", interrupted: "stopped" };
// Canned responses' variables when the name is unknown (the server fills `/shortcode` the same way).
export const UNKNOWN_CUSTOMER_NAME = "there";
export const UNKNOWN_AGENT_NAME = "the support team";
export const HANDOFF_LABELS = {
  customer_request: "The customer asked for a person",
  unanswered: "The bot could not answer",
  doubt: "A reply may have been wrong",
  agent: "An agent took it over",
};

const root = $("console");

export const state = {
  token: null,
  me: null,
  agentNames: new Map(),
  unknownAgentIds: new Set(),
  bots: parseBots(root.dataset.bots),
  filters: { status: "", bot: "", assignee: "", rating: "", q: "" },
  page: 1,
  total: 0,
  items: [],
  selectedId: null,
  transcript: null,
  canned: [],
  // Conversations whose customer asked for a person while this console was watching.
  wantsPerson: new Set(),
  replyDrafts: new Map(),
  noteDrafts: new Map(),
  stream: null,
  inboxSeq: 0,
  transcriptSeq: 0,
  // The open transcript's rendered entries by key, reused while unchanged so a live refresh
  // keeps the agent's text selection and scroll position.
  transcriptNodes: new Map(),
  seenMessageIds: null,
};

function parseBots(raw) {
  try {
    const bots = JSON.parse(raw || "[]");
    return Array.isArray(bots) ? bots.map(String) : [];
  } catch {
    return [];
  }
}

// Reads `message` to screen readers, again even when it is the same as the last one.
export function announce(message) {
  const node = $("announcer");
  node.textContent = "";
  // A fresh text node after a tick makes screen readers read a repeated message again.
  setTimeout(() => {
    node.textContent = message;
  }, 30);
}
