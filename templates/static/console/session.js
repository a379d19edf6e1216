/* Signing in and out: on sign-in everything loads and the live stream starts; on sign-out
 * (asked, or signalled by a refused token) everything is cleared. */

import { request } from "../shared/api.js";
import { $, debounce, showError } from "../shared/dom.js";
import { loadCanned } from "./canned.js";
import { api } from "./client.js";
import { openFromLocation } from "./conversation.js";
import { loadInbox, renderInbox } from "./inbox.js";
import { startEvents, stopEvents } from "./live.js";
import { listen } from "./signals.js";
import { REFRESH_DEBOUNCE_MS, TOKEN_KEY, state } from "./state.js";
import { renderTranscript } from "./transcript.js";

async function signIn(token, { restoring = false } = {}) {
  const me = await request("/api/v1/me", { token });
  state.token = token;
  state.me = me;
  sessionStorage.setItem(TOKEN_KEY, token);
  $("agent-name").textContent = me.name;
  $("agent-role").textContent = me.role;
  $("session").hidden = false;
  $("sign-in-view").hidden = true;
  $("app-view").hidden = false;
  showError("sign-in-error", "");
  $("token-input").value = "";
  loadAgentNames();
  loadCanned();
  startEvents();
  await loadInbox();
  openFromLocation();
  if (!restoring) $("filter-status").focus();
}

function signOut(message) {
  stopEvents();
  sessionStorage.removeItem(TOKEN_KEY);
  Object.assign(state, {
    token: null,
    me: null,
    items: [],
    total: 0,
    page: 1,
    selectedId: null,
    transcript: null,
    canned: [],
  });
  state.agentNames.clear();
  state.unknownAgentIds.clear();
  state.wantsPerson.clear();
  state.replyDrafts.clear();
  state.noteDrafts.clear();
  state.transcriptNodes.clear();
  state.seenMessageIds = null;
  $("conversation-list").replaceChildren();
  $("transcript").replaceChildren();
  $("reply-input").value = "";
  $("note-input").value = "";
  $("conversation-view").hidden = true;
  $("no-selection").hidden = false;
  $("session").hidden = true;
  $("app-view").hidden = true;
  $("sign-in-view").hidden = false;
  if ($("canned-dialog").open) $("canned-dialog").close();
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  document.title = "prefixdesk console";
  showError("sign-in-error", message || "");
  $("token-input").focus();
}

const loadNamesSoon = debounce(() => state.token && loadAgentNames(), REFRESH_DEBOUNCE_MS);

async function loadAgentNames() {
  try {
    for (const agent of await api("/api/v1/agents/names")) state.agentNames.set(agent.id, agent.name);
    renderInbox();
    if (state.transcript) renderTranscript(state.transcript);
  } catch {
    // Names are a nicety: ids are shown instead.
  }
}

export function bindSession() {
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    if (!token) {
      showError("sign-in-error", "Enter your API token.");
      return;
    }
    // A header cannot carry other characters; fetch would fail as if the server were down.
    if (!/^[\x21-\x7e]+$/.test(token)) {
      showError("sign-in-error", "An API token is one word of plain letters, digits and punctuation.");
      return;
    }
    const button = event.submitter || $("sign-in-form").querySelector("button");
    button.disabled = true;
    try {
      await signIn(token);
    } catch (error) {
      showError("sign-in-error", error.detail || String(error));
      $("token-input").select();
    } finally {
      button.disabled = false;
    }
  });
  $("sign-out").addEventListener("click", () => signOut("Signed out."));
  listen("unauthorized", signOut);
  listen("agent-unknown", loadNamesSoon);
}

// Signs in again with the token this tab kept, if any.
export function restoreSession() {
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) {
    signIn(saved, { restoring: true }).catch((error) => {
      sessionStorage.removeItem(TOKEN_KEY);
      showError("sign-in-error", error.detail || String(error));
    });
  } else {
    $("token-input").focus();
  }
}
