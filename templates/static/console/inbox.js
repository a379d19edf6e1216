/* The inbox: the filtered, paged list of conversations, and the keyboard moves through it. */

import { $, debounce, el, showError } from "../shared/dom.js";
import { agentName, customerNode, ratingNode, shortId, statusBadge, timeAgo, timeNode } from "./format.js";
import { api } from "./client.js";
import { signal } from "./signals.js";
import { PAGE_SIZE, REFRESH_DEBOUNCE_MS, SEARCH_DEBOUNCE_MS, state } from "./state.js";

function inboxQuery() {
  const params = new URLSearchParams({ page: String(state.page), page_size: String(PAGE_SIZE) });
  const { status, bot, assignee, rating, q } = state.filters;
  if (status) params.set("status", status);
  if (bot) params.set("bot", bot);
  if (rating) params.set("rating_at_most", rating);
  if (assignee === "me") params.set("assignee_id", String(state.me.id));
  if (assignee === "unassigned") params.set("unassigned", "true");
  if (q.trim()) params.set("q", q.trim());
  return params;
}

export async function loadInbox() {
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

export const refreshInbox = debounce(loadInbox, REFRESH_DEBOUNCE_MS);

function needsPerson(item) {
  if (item.status !== "open" || item.assignee_id !== null) return false;
  return state.wantsPerson.has(item.id) || ["customer_request", "unanswered"].includes(item.handoff_reason);
}

function lastMessageText(text) {
  if (text === null || text === undefined) return "No messages yet";
  return text.trim() ? text : "(empty message)";
}

export function renderInbox() {
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
        customerNode(item.customer),
        statusBadge(item.status),
        waiting ? el("span", { class: "flag" }, "Wants a person") : null,
        ratingNode(item.rating),
        el("span", { class: "row-time" }, timeNode(item.updated_at, (_date, iso) => timeAgo(iso))),
      ),
      el("span", { class: "row-last" }, lastMessageText(item.last_message)),
      item.rating?.comment ? el("span", { class: "row-rating-comment" }, `“${item.rating.comment}”`) : null,
      el(
        "span",
        { class: "row-meta" },
        el("span", { class: "row-bot" }, item.bot),
        ` · #${shortId(item.id)} · ${item.message_count} message${item.message_count === 1 ? "" : "s"}`,
        item.assignee_id !== null ? ` · ${agentName(item.assignee_id)}` : "",
      ),
    );
    button.addEventListener("click", () => signal("conversation-chosen", item.id));
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

export function bindInbox() {
  const botSelect = $("filter-bot");
  for (const slug of state.bots) botSelect.append(el("option", { value: slug }, slug));
  const applyFilters = () => {
    state.filters = {
      status: $("filter-status").value,
      bot: $("filter-bot").value,
      assignee: $("filter-assignee").value,
      rating: $("filter-rating").value,
      q: $("filter-q").value,
    };
    state.page = 1;
    loadInbox();
  };
  const search = debounce(applyFilters, SEARCH_DEBOUNCE_MS);
  for (const id of ["filter-status", "filter-bot", "filter-assignee", "filter-rating"]) $(id).addEventListener("change", applyFilters);
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
  // Keep "5 minutes ago" honest between live updates.
  setInterval(() => state.token && renderInbox(), 60000);
}
