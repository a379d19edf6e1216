/* The support agents' console: a thin client of the agents' REST API.
 *
 * Text from the server or a customer only ever reaches the page through textContent and
 * text nodes (see `el`), never through HTML parsing: customers can type markup.
 */
(() => {
  "use strict";

  const TOKEN_KEY = "prefixdesk.console.token";
  const PAGE_SIZE = 25;
  const REFRESH_DEBOUNCE_MS = 250;
  const SEARCH_DEBOUNCE_MS = 300;
  const RETRY_FIRST_MS = 1000;
  const RETRY_MAX_MS = 30000;
  // A stream that stayed up this long was healthy: the next failure starts the backoff over.
  const HEALTHY_STREAM_MS = 10000;
  const STATUS_LABELS = { bot: "With the bot", open: "Open", resolved: "Resolved" };
  const ROLE_LABELS = { user: "Customer", assistant: "Bot", agent: "Agent" };
  const HANDOFF_LABELS = {
    customer_request: "The customer asked for a person",
    unanswered: "The bot could not answer",
    agent: "An agent took it over",
  };

  const root = document.getElementById("console");
  const $ = (id) => document.getElementById(id);

  const state = {
    token: null,
    me: null,
    agentNames: new Map(),
    bots: parseBots(root.dataset.bots),
    filters: { status: "", bot: "", assignee: "", q: "" },
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

  /* ---------- DOM helpers ---------- */

  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function showError(id, message) {
    const node = $(id);
    node.textContent = message || "";
    node.hidden = !message;
  }

  function announce(message) {
    const node = $("announcer");
    node.textContent = "";
    // A fresh text node after a tick makes screen readers read a repeated message again.
    setTimeout(() => {
      node.textContent = message;
    }, 30);
  }

  function debounce(fn, ms) {
    let timer = null;
    const debounced = () => {
      clearTimeout(timer);
      timer = setTimeout(fn, ms);
    };
    debounced.cancel = () => clearTimeout(timer);
    return debounced;
  }

  const sleep = (ms, signal) =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });

  /* ---------- formatting ---------- */

  const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
  const dateAndClock = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  const full = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "medium" });

  function timeAgo(iso) {
    const seconds = (new Date(iso).getTime() - Date.now()) / 1000;
    const steps = [
      [60, "second"],
      [60, "minute"],
      [24, "hour"],
      [7, "day"],
      [4.35, "week"],
      [12, "month"],
      [Infinity, "year"],
    ];
    let value = seconds;
    for (const [size, unit] of steps) {
      if (Math.abs(value) < size) {
        return unit === "second" && Math.abs(value) < 45 ? "just now" : relative.format(Math.round(value), unit);
      }
      value /= size;
    }
    return "";
  }

  function timeNode(iso, format) {
    const date = new Date(iso);
    return el("time", { datetime: iso, title: full.format(date) }, format(date, iso));
  }

  function shortTime(date) {
    const today = new Date().toDateString() === date.toDateString();
    return today ? clock.format(date) : dateAndClock.format(date);
  }

  const shortId = (id) => String(id).slice(0, 8);

  function agentName(id) {
    if (id === null || id === undefined) return "nobody";
    if (state.me && id === state.me.id) return `${state.me.name} (you)`;
    return state.agentNames.get(id) || `agent #${id}`;
  }

  function milliseconds(value) {
    return `${Number(value).toFixed(1)} ms`;
  }

  function cachedShare(cached, prompt) {
    const percent = prompt > 0 ? Math.round((100 * cached) / prompt) : 0;
    return `${cached}/${prompt} cached (${percent}%)`;
  }

  function statusBadge(status) {
    return el("span", { class: `badge status-${status}`, dataset: { status } }, STATUS_LABELS[status] || status);
  }

  /* ---------- the API ---------- */

  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
      this.detail = detail;
    }
  }

  async function request(path, { method = "GET", body, token = state.token } = {}) {
    const headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
      });
    } catch {
      throw new ApiError(0, "The server cannot be reached; check the connection and try again.");
    }
    let payload = null;
    if (response.status !== 204) {
      try {
        payload = await response.json();
      } catch {
        payload = null;
      }
    }
    if (!response.ok) {
      const detail =
        payload && typeof payload.detail === "string"
          ? payload.detail
          : `The server answered ${response.status} ${response.statusText}.`;
      throw new ApiError(response.status, detail);
    }
    return payload;
  }

  // Signed-in calls: a 401 means the token was revoked meanwhile, so the session ends.
  async function api(path, options) {
    try {
      return await request(path, options);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401 && state.token) {
        signOut(`Signed out: ${error.detail}`);
      }
      throw error;
    }
  }

  const conversationPath = (id, suffix = "") => `/api/v1/conversations/${encodeURIComponent(id)}${suffix}`;

  /* ---------- signing in and out ---------- */

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
    if (me.role === "admin") loadAgentNames();
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

  async function loadAgentNames() {
    try {
      for (const agent of await api("/api/v1/agents")) state.agentNames.set(agent.id, agent.name);
      renderInbox();
      if (state.transcript) renderTranscript(state.transcript);
    } catch {
      // Names are a nicety: ids are shown instead.
    }
  }

  /* ---------- the inbox ---------- */

  function inboxQuery() {
    const params = new URLSearchParams({ page: String(state.page), page_size: String(PAGE_SIZE) });
    const { status, bot, assignee, q } = state.filters;
    if (status) params.set("status", status);
    if (bot) params.set("bot", bot);
    if (assignee === "me") params.set("assignee_id", String(state.me.id));
    if (assignee === "unassigned") params.set("unassigned", "true");
    if (q.trim()) params.set("q", q.trim());
    return params;
  }

  async function loadInbox() {
    if (!state.token) return;
    const seq = ++state.inboxSeq;
    let page;
    try {
      page = await api(`/api/v1/conversations?${inboxQuery()}`);
    } catch (error) {
      if (seq === state.inboxSeq && state.token) showError("inbox-error", error.detail || String(error));
      return;
    }
    if (seq !== state.inboxSeq) return;
    showError("inbox-error", "");
    const lastPage = Math.max(1, Math.ceil(page.total / PAGE_SIZE));
    if (state.page > lastPage) {
      state.page = lastPage;
      return loadInbox();
    }
    state.items = page.items;
    state.total = page.total;
    for (const item of page.items) {
      if (item.status !== "open" || item.assignee_id !== null) state.wantsPerson.delete(item.id);
    }
    renderInbox();
  }

  const refreshInbox = debounce(loadInbox, REFRESH_DEBOUNCE_MS);

  function needsPerson(item) {
    if (item.status !== "open" || item.assignee_id !== null) return false;
    return state.wantsPerson.has(item.id) || ["customer_request", "unanswered"].includes(item.handoff_reason);
  }

  function lastMessageText(text) {
    if (text === null || text === undefined) return "No messages yet";
    return text.trim() ? text : "(empty message)";
  }

  function renderInbox() {
    const list = $("conversation-list");
    const focusedId = list.contains(document.activeElement) ? document.activeElement.dataset.conversationId : null;
    const rows = state.items.map((item) => {
      const waiting = needsPerson(item);
      const button = el(
        "button",
        {
          type: "button",
          class: `row${waiting ? " needs-person" : ""}`,
          dataset: { conversationId: item.id, status: item.status },
          "aria-current": item.id === state.selectedId ? "true" : null,
        },
        el(
          "span",
          { class: "row-top" },
          el("span", { class: "row-bot" }, item.bot),
          statusBadge(item.status),
          waiting ? el("span", { class: "flag" }, "Wants a person") : null,
          el("span", { class: "row-time" }, timeNode(item.updated_at, (_date, iso) => timeAgo(iso))),
        ),
        el("span", { class: "row-last" }, lastMessageText(item.last_message)),
        el(
          "span",
          { class: "row-meta" },
          `#${shortId(item.id)} · ${item.message_count} message${item.message_count === 1 ? "" : "s"}`,
          item.assignee_id !== null ? ` · ${agentName(item.assignee_id)}` : "",
        ),
      );
      button.addEventListener("click", () => selectConversation(item.id));
      return el("li", {}, button);
    });
    list.replaceChildren(...rows);
    $("inbox-empty").hidden = rows.length > 0;
    const first = state.total === 0 ? 0 : (state.page - 1) * PAGE_SIZE + 1;
    const last = Math.min(state.total, state.page * PAGE_SIZE);
    $("page-info").textContent = `${first}–${last} of ${state.total}`;
    $("page-prev").disabled = state.page <= 1;
    $("page-next").disabled = last >= state.total;
    const waiting = state.items.filter(needsPerson).length;
    document.title = waiting ? `(${waiting}) prefixdesk console` : "prefixdesk console";
    if (focusedId) list.querySelector(`[data-conversation-id="${CSS.escape(focusedId)}"]`)?.focus();
  }

  function onListKeydown(event) {
    if (!["ArrowDown", "ArrowUp", "Home", "End"].includes(event.key)) return;
    const buttons = [...$("conversation-list").querySelectorAll("button.row")];
    const index = buttons.indexOf(document.activeElement);
    if (index < 0 || !buttons.length) return;
    event.preventDefault();
    const next = {
      ArrowDown: Math.min(index + 1, buttons.length - 1),
      ArrowUp: Math.max(index - 1, 0),
      Home: 0,
      End: buttons.length - 1,
    }[event.key];
    buttons[next].focus();
  }

  function bindFilters() {
    const botSelect = $("filter-bot");
    for (const slug of state.bots) botSelect.append(el("option", { value: slug }, slug));
    const applyFilters = () => {
      state.filters = {
        status: $("filter-status").value,
        bot: $("filter-bot").value,
        assignee: $("filter-assignee").value,
        q: $("filter-q").value,
      };
      state.page = 1;
      loadInbox();
    };
    const search = debounce(applyFilters, SEARCH_DEBOUNCE_MS);
    for (const id of ["filter-status", "filter-bot", "filter-assignee"]) $(id).addEventListener("change", applyFilters);
    $("filter-q").addEventListener("input", search);
    $("filters").addEventListener("submit", (event) => {
      event.preventDefault();
      search.cancel();
      applyFilters();
    });
    $("page-prev").addEventListener("click", () => {
      state.page = Math.max(1, state.page - 1);
      loadInbox();
    });
    $("page-next").addEventListener("click", () => {
      state.page += 1;
      loadInbox();
    });
    $("conversation-list").addEventListener("keydown", onListKeydown);
  }

  /* ---------- the open conversation ---------- */

  function selectConversation(id) {
    const hash = `#conversation=${encodeURIComponent(id)}`;
    if (location.hash !== hash) history.pushState(null, "", hash);
    openConversation(id);
  }

  function openFromLocation() {
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

  async function loadTranscript({ scrollToEnd = false } = {}) {
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

  const refreshTranscript = debounce(() => loadTranscript(), REFRESH_DEBOUNCE_MS);

  function renderTranscript(t) {
    $("conversation-heading").textContent = `Conversation #${shortId(t.id)} · ${t.bot}`;
    $("conversation-heading").title = t.id;
    $("conversation-status").replaceWith(
      Object.assign(statusBadge(t.status), { id: "conversation-status" }),
    );
    $("conversation-assignee").textContent = t.assignee_id === null ? "Unassigned" : agentName(t.assignee_id);
    const handoff = $("conversation-handoff");
    handoff.replaceChildren(t.handoff_reason ? HANDOFF_LABELS[t.handoff_reason] || t.handoff_reason : "None");
    if (t.handed_off_at) handoff.append(el("span", { class: "muted" }, " at ", timeNode(t.handed_off_at, shortTime)));
    handoff.dataset.reason = t.handoff_reason || "";
    const started = t.messages.length ? t.messages[0].created_at : null;
    $("conversation-started").replaceChildren(started ? timeNode(started, shortTime) : "Not yet");
    renderContext(t.context);
    renderActions(t);
    renderComposer(t);

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
    ].sort((a, b) => a.at - b.at || a.order - b.order);
    const greeting = cachedNode("greeting", t.greeting, () => greetingNode(t.greeting));
    const nodes = [greeting, ...entries.map((entry) => entry.node)];
    reconcile($("transcript"), nodes);
    const live = new Set(nodes);
    for (const [key, entry] of state.transcriptNodes) if (!live.has(entry.node)) state.transcriptNodes.delete(key);
    announceNewCustomerMessages(t);
  }

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
        el("dt", {}, "Customer"),
        el("dd", {}, pairs.map(([key, value]) => `${key}: ${value}`).join(" · ")),
      ),
    );
  }

  function greetingNode(text) {
    return el(
      "li",
      { class: "msg role-assistant greeting" },
      el("div", { class: "msg-head" }, el("span", { class: "who" }, "Bot"), el("span", { class: "tag" }, "greeting")),
      el("p", { class: "msg-text" }, text),
    );
  }

  function messageNode(message) {
    const who = message.role === "agent" ? `Agent: ${agentName(message.author_agent_id)}` : ROLE_LABELS[message.role];
    return el(
      "li",
      {
        class: `msg role-${message.role}`,
        dataset: { messageId: message.id, role: message.role, status: message.status },
      },
      el(
        "div",
        { class: "msg-head" },
        el("span", { class: "who" }, who || message.role),
        el("span", { class: `tag msg-status status-${message.status}` }, message.status),
        timeNode(message.created_at, shortTime),
      ),
      el("p", { class: "msg-text" }, messageText(message)),
      message.role === "assistant" ? metricsNode(message) : null,
    );
  }

  function messageText(message) {
    if (message.text.trim()) return message.text;
    return message.status === "generating" ? "The bot is writing…" : "(empty)";
  }

  function metricsNode(message) {
    const metric = (name, label, value) =>
      el("div", {}, el("dt", {}, label), el("dd", { dataset: { metric: name } }, value));
    const items = [];
    if (message.prompt_tokens !== null) {
      items.push(metric("prompt-tokens", "Prompt", `${message.prompt_tokens} tokens`));
      if (message.cached_tokens !== null) {
        items.push(metric("cached", "Cache", cachedShare(message.cached_tokens, message.prompt_tokens)));
      }
    }
    if (message.completion_tokens !== null) items.push(metric("completion-tokens", "Reply", `${message.completion_tokens} tokens`));
    if (message.ttft_ms !== null) items.push(metric("ttft", "TTFT", milliseconds(message.ttft_ms)));
    if (message.total_ms !== null) items.push(metric("total", "Total", milliseconds(message.total_ms)));
    if (message.finish_reason && message.finish_reason !== "stop") items.push(metric("finish", "Finish", message.finish_reason));
    if (!items.length) return null;
    return el("dl", { class: "metrics", "aria-label": "Timings and tokens" }, items);
  }

  function noteNode(note) {
    return el(
      "li",
      { class: "note", dataset: { noteId: note.id }, "aria-label": "Private note" },
      el(
        "div",
        { class: "msg-head" },
        el("span", { class: "private-label" }, "Private note"),
        el("span", { class: "who" }, agentName(note.agent_id)),
        timeNode(note.created_at, shortTime),
      ),
      el("p", { class: "msg-text" }, note.text),
    );
  }

  /* ---------- actions ---------- */

  const ACTIONS = {
    "take-over": { path: "/take-over", done: "You took the conversation over." },
    "assign-me": { path: "/assign", body: () => ({ agent_id: state.me.id }), done: "Assigned to you." },
    unassign: { path: "/assign", body: () => ({ agent_id: null }), done: "Unassigned." },
    "hand-back": { path: "/hand-back", done: "Handed back to the bot." },
    resolve: { path: "/resolve", done: "Resolved." },
    reopen: { path: "/reopen", done: "Reopened." },
  };

  function validActions(t) {
    const mine = t.assignee_id === state.me.id;
    return {
      "take-over": t.status === "bot",
      "assign-me": t.status === "open" && !mine,
      unassign: t.status === "open" && t.assignee_id !== null,
      "hand-back": t.status === "open",
      resolve: t.status !== "resolved",
      reopen: t.status === "resolved",
    };
  }

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
      await api(conversationPath(id, action.path), { method: "POST", body: action.body ? action.body() : undefined });
      announce(action.done);
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

  /* ---------- replying, canned responses and notes ---------- */

  function renderComposer(t) {
    const resolved = t.status === "resolved";
    $("reply-input").disabled = resolved;
    $("reply-send").disabled = resolved;
    $("reply-hint").textContent = {
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
      // Notes publish no event: reload here.
      await loadTranscript({ scrollToEnd: true });
    } catch (error) {
      showError("note-error", error.detail || String(error));
    }
  }

  const suggestion = { items: [], active: -1 };

  function typedShortcode() {
    const match = /^\/(\S*)$/.exec($("reply-input").value);
    return match ? match[1].toLowerCase() : null;
  }

  function matchingCanned(typed) {
    const starts = state.canned.filter((c) => c.shortcode.startsWith(typed));
    const contains = state.canned.filter((c) => !c.shortcode.startsWith(typed) && c.shortcode.includes(typed));
    return [...starts, ...contains];
  }

  function updateSuggestions() {
    const typed = typedShortcode();
    if (typed === null) return closeSuggestions();
    // Opening the list fetches the canned responses again: colleagues may have added some.
    if ($("canned-suggestions").hidden) loadCanned();
    const previous = suggestion.items[suggestion.active]?.shortcode;
    suggestion.items = matchingCanned(typed);
    const kept = suggestion.items.findIndex((canned) => canned.shortcode === previous);
    suggestion.active = kept >= 0 ? kept : suggestion.items.length ? 0 : -1;
    renderSuggestions();
  }

  function renderSuggestions() {
    const list = $("canned-suggestions");
    const input = $("reply-input");
    const options = suggestion.items.map((canned, index) =>
      el(
        "li",
        {
          id: `canned-option-${index}`,
          role: "option",
          class: "suggestion",
          "aria-selected": index === suggestion.active ? "true" : "false",
          dataset: { shortcode: canned.shortcode },
          onmousedown: (event) => event.preventDefault(),
          onclick: () => pickSuggestion(index),
        },
        el("span", { class: "shortcode" }, `/${canned.shortcode}`),
        el("span", { class: "canned-text" }, canned.text),
      ),
    );
    if (!options.length) {
      options.push(
        el("li", { class: "suggestion none", role: "option", "aria-disabled": "true" }, "No canned response matches"),
      );
    }
    list.replaceChildren(...options);
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    if (suggestion.active >= 0) {
      input.setAttribute("aria-activedescendant", `canned-option-${suggestion.active}`);
      $(`canned-option-${suggestion.active}`).scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  function closeSuggestions() {
    suggestion.items = [];
    suggestion.active = -1;
    $("canned-suggestions").hidden = true;
    $("canned-suggestions").replaceChildren();
    $("reply-input").setAttribute("aria-expanded", "false");
    $("reply-input").removeAttribute("aria-activedescendant");
  }

  function pickSuggestion(index) {
    const canned = suggestion.items[index];
    if (!canned) return;
    $("reply-input").value = `/${canned.shortcode}`;
    closeSuggestions();
    updatePreview();
    $("reply-input").focus();
  }

  function updatePreview() {
    const preview = $("reply-preview");
    const typed = typedShortcode();
    if (typed === null || typed === "") {
      preview.hidden = true;
      preview.replaceChildren();
      return;
    }
    const canned = state.canned.find((c) => c.shortcode === typed);
    if (!canned && matchingCanned(typed).length) {
      // Still typing a shortcode the list offers.
      preview.hidden = true;
      preview.replaceChildren();
      return;
    }
    preview.classList.toggle("unknown", !canned);
    preview.replaceChildren(
      ...(canned
        ? [el("span", { class: "preview-label" }, `Sends /${canned.shortcode}: `), canned.text]
        : [`No canned response /${typed}.`]),
    );
    preview.hidden = false;
  }

  function onReplyKeydown(event) {
    const open = !$("canned-suggestions").hidden;
    if (open && suggestion.items.length) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        suggestion.active = (suggestion.active + step + suggestion.items.length) % suggestion.items.length;
        renderSuggestions();
        return;
      }
      if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") {
        event.preventDefault();
        pickSuggestion(suggestion.active);
        return;
      }
    }
    if (open && event.key === "Escape") {
      event.preventDefault();
      closeSuggestions();
      return;
    }
    // Enter sends; Shift+Enter starts a new line; Enter that finishes an IME composition does neither.
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendReply();
    }
  }

  async function loadCanned() {
    try {
      state.canned = await api("/api/v1/canned-responses");
    } catch (error) {
      showError("canned-error", error.detail || String(error));
      return;
    }
    renderCannedList();
    if (!$("canned-suggestions").hidden) updateSuggestions();
    updatePreview();
  }

  function renderCannedList() {
    const rows = state.canned.map((canned) =>
      el(
        "li",
        { dataset: { shortcode: canned.shortcode } },
        el("span", { class: "shortcode" }, `/${canned.shortcode}`),
        el("span", { class: "canned-text" }, canned.text),
        el(
          "button",
          {
            type: "button",
            class: "secondary small",
            "aria-label": `Delete /${canned.shortcode}`,
            onclick: () => deleteCanned(canned),
          },
          "Delete",
        ),
      ),
    );
    if (!rows.length) rows.push(el("li", { class: "empty" }, "No canned responses yet."));
    $("canned-list").replaceChildren(...rows);
  }

  async function createCanned(event) {
    event.preventDefault();
    const shortcode = $("canned-shortcode").value.trim().replace(/^\//, "");
    const text = $("canned-text").value;
    showError("canned-error", "");
    try {
      await api("/api/v1/canned-responses", { method: "POST", body: { shortcode, text } });
      $("canned-shortcode").value = "";
      $("canned-text").value = "";
      announce(`Canned response /${shortcode} created.`);
      await loadCanned();
      $("canned-shortcode").focus();
    } catch (error) {
      showError("canned-error", error.detail || String(error));
    }
  }

  async function deleteCanned(canned) {
    if (!window.confirm(`Delete the canned response /${canned.shortcode}?`)) return;
    showError("canned-error", "");
    try {
      await api(`/api/v1/canned-responses/${canned.id}`, { method: "DELETE" });
      announce(`Canned response /${canned.shortcode} deleted.`);
      await loadCanned();
    } catch (error) {
      showError("canned-error", error.detail || String(error));
    }
  }

  const COMPOSER_TABS = {
    reply: { tab: "tab-reply", panel: "reply-form", input: "reply-input" },
    note: { tab: "tab-note", panel: "note-form", input: "note-input" },
  };

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

  /* ---------- live events ---------- */

  function setLive(stateName, text) {
    const node = $("live-state");
    node.dataset.state = stateName;
    node.textContent = text;
  }

  function startEvents() {
    stopEvents();
    const controller = new AbortController();
    state.stream = controller;
    followEvents(controller.signal);
  }

  function stopEvents() {
    state.stream?.abort();
    state.stream = null;
    setLive("offline", "Offline");
  }

  // EventSource cannot send an Authorization header, so the stream is read with fetch.
  async function followEvents(signal) {
    let delay = RETRY_FIRST_MS;
    while (!signal.aborted) {
      let connectedAt = null;
      try {
        const response = await fetch("/api/v1/events", {
          headers: { Authorization: `Bearer ${state.token}`, Accept: "text/event-stream" },
          cache: "no-store",
          signal,
        });
        if (response.status === 401) {
          let detail = "this token is no longer valid";
          try {
            detail = (await response.json()).detail || detail;
          } catch {
            // keep the generic text
          }
          signOut(`Signed out: ${detail}`);
          return;
        }
        if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
        connectedAt = Date.now();
        setLive("live", "Live");
        // Whatever happened while the stream was down (or before it was up) arrived as no event.
        refreshInbox();
        if (state.selectedId) refreshTranscript();
        await readEvents(response.body, onEvent, signal);
      } catch {
        // a dropped or refused stream: retried below
      }
      if (signal.aborted) return;
      if (connectedAt !== null && Date.now() - connectedAt > HEALTHY_STREAM_MS) delay = RETRY_FIRST_MS;
      const wait = delay + Math.random() * 250;
      setLive("reconnecting", `Reconnecting in ${Math.round(wait / 1000)} s…`);
      await sleep(wait, signal);
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  }

  async function readEvents(body, handle, signal) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let type = "message";
    let data = [];
    const abort = () => reader.cancel().catch(() => {});
    signal.addEventListener("abort", abort);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (;;) {
          const end = buffer.search(/\r\n|\r|\n/);
          // A lone CR at the end may be the first half of a CRLF split across chunks.
          if (end < 0 || (buffer[end] === "\r" && end === buffer.length - 1)) break;
          const line = buffer.slice(0, end);
          buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
          if (line === "") {
            if (data.length) dispatch(type, data.join("\n"), handle);
            type = "message";
            data = [];
            continue;
          }
          if (line.startsWith(":")) continue; // a comment: the server's keep-alive ping
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let fieldValue = colon < 0 ? "" : line.slice(colon + 1);
          if (fieldValue.startsWith(" ")) fieldValue = fieldValue.slice(1);
          if (field === "event") type = fieldValue;
          else if (field === "data") data.push(fieldValue);
        }
      }
    } finally {
      signal.removeEventListener("abort", abort);
    }
  }

  function dispatch(type, raw, handle) {
    let event;
    try {
      event = JSON.parse(raw);
    } catch {
      return;
    }
    handle(event.type || type, event);
  }

  function onEvent(type, event) {
    const id = event.conversation_id;
    if (type === "conversation.handoff_requested") {
      state.wantsPerson.add(id);
      announce("A customer asked for a person.");
    } else if (type === "conversation.status_changed") {
      const data = event.data || {};
      if (data.status !== "open" || data.assignee_id !== null) state.wantsPerson.delete(id);
    }
    refreshInbox();
    if (id && id === state.selectedId) refreshTranscript();
  }

  /* ---------- wiring ---------- */

  function bind() {
    bindFilters();
    bindTabs();
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
    $("actions").addEventListener("click", (event) => {
      const button = event.target.closest("button[data-action]");
      if (button) runAction(button.dataset.action, button);
    });
    $("reply-form").addEventListener("submit", (event) => {
      event.preventDefault();
      sendReply();
    });
    const reply = $("reply-input");
    reply.addEventListener("input", () => {
      updateSuggestions();
      updatePreview();
    });
    reply.addEventListener("keydown", onReplyKeydown);
    reply.addEventListener("blur", () => setTimeout(closeSuggestions, 100));
    $("note-form").addEventListener("submit", (event) => {
      event.preventDefault();
      addNote();
    });
    $("note-input").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        addNote();
      }
    });
    $("open-canned").addEventListener("click", () => {
      showError("canned-error", "");
      $("canned-dialog").showModal();
      loadCanned();
    });
    $("close-canned").addEventListener("click", () => $("canned-dialog").close());
    $("canned-form").addEventListener("submit", createCanned);
    window.addEventListener("popstate", () => state.token && openFromLocation());
    // Keep "5 minutes ago" honest between live updates.
    setInterval(() => state.token && renderInbox(), 60000);
  }

  bind();
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) {
    signIn(saved, { restoring: true }).catch((error) => {
      sessionStorage.removeItem(TOKEN_KEY);
      showError("sign-in-error", error.detail || String(error));
    });
  } else {
    $("token-input").focus();
  }
})();
