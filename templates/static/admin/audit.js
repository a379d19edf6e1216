/* The admin page's records: the transcript export and erasure forms, the widget origins, and the
 * audit log of what agents and admins did (newest first, from /api/v1/admin/audit, a page at a
 * time), filtered by who, what and when. Actions read as their labels; dates as the form that
 * caused them had them (./audit_details.js). It draws itself below the dashboard once an admin
 * has signed in, and goes on sign-out. */

import { request, savedToken } from "../shared/api.js";
import { $, el } from "../shared/dom.js";
import { describe, written } from "./audit_details.js";
import { eraseForm } from "./erasure.js";
import { row } from "./format.js";
import { originsSection } from "./origins.js";
import { exportForm } from "./records.js";

const PAGE_SIZE = 20;
const HEADINGS = ["When", "Who", "Action", "Target", "Details"];
const token = savedToken; // the tab's one sign-in (../shared/signin.js)
const container = $("records");
let page = 1;
let query = new URLSearchParams(); // the filters applied

// Every agent's name by id, asked again at each use: agents are added while the page is open.
async function agentNames() {
  const names = await request("/api/v1/agents/names", { token: token() });
  return new Map(names.map((a) => [a.id, a.name]));
}

// A day typed in the filter, as the instant its first moment is in the browser's time zone.
function startOfDay(day, plusDays = 0) {
  const date = new Date(`${day}T00:00`);
  date.setDate(date.getDate() + plusDays);
  return date.toISOString();
}

function filterForm() {
  const actor = el("select", { id: "audit-actor" }, el("option", { value: "" }, "Anyone"));
  const action = el("select", { id: "audit-action" }, el("option", { value: "" }, "Any action"));
  const from = el("input", { id: "audit-from", type: "date" });
  const to = el("input", { id: "audit-to", type: "date" });
  const clear = el("button", { type: "button" }, "Clear");
  const form = el(
    "form",
    { class: "audit-filter", "aria-label": "Filter the audit log" },
    el("label", { for: "audit-actor" }, "Who "),
    actor,
    el("label", { for: "audit-action" }, " did "),
    action,
    el("label", { for: "audit-from" }, " from "),
    from,
    el("label", { for: "audit-to" }, " to (inclusive) "),
    to,
    " ",
    el("button", { type: "submit" }, "Filter"),
    " ",
    clear,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    // The days are whole days in this browser's time zone, as the "When" column shows them;
    // the API takes the end exclusive: the day after the last one.
    query = new URLSearchParams();
    if (actor.value) query.set("actor_id", actor.value);
    if (action.value) query.set("action", action.value);
    if (from.value) query.set("from", startOfDay(from.value));
    if (to.value) query.set("to", startOfDay(to.value, 1));
    showPage(1);
  });
  clear.addEventListener("click", () => {
    form.reset();
    query = new URLSearchParams();
    showPage(1);
  });
  return { form, actor, action };
}

async function fillChoices({ actor, action }) {
  try {
    const [names, actions] = await Promise.all([
      agentNames(),
      request("/api/v1/admin/audit/actions", { token: token() }),
    ]);
    actor.append(...[...names].map(([id, name]) => el("option", { value: String(id) }, name)));
    action.append(...actions.map((a) => el("option", { value: a.action }, a.label)));
  } catch (failure) {
    $("audit-info").textContent = `Filters not loaded: ${failure.message}`;
  }
}

function auditTable() {
  const previous = el("button", { type: "button", id: "audit-previous" }, "Newer");
  const next = el("button", { type: "button", id: "audit-next" }, "Older");
  previous.addEventListener("click", () => showPage(page - 1));
  next.addEventListener("click", () => showPage(page + 1));
  const filters = filterForm();
  fillChoices(filters);
  return el(
    "div",
    {},
    el("h3", { id: "audit-title" }, "Audit log"),
    filters.form,
    el("table", { id: "audit-log", "aria-labelledby": "audit-title" }, el("thead", {}, row("th", HEADINGS)), el("tbody", {})),
    el("p", {}, previous, " ", el("span", { id: "audit-info", "aria-live": "polite" }, ""), " ", next),
  );
}

function entryRow(entry, names) {
  const action = el("td", { title: entry.action, dataset: { action: entry.action } }, entry.action_label);
  return el(
    "tr",
    {},
    el("td", {}, written(entry.created_at)),
    el("td", {}, entry.actor_name),
    action,
    el("td", {}, entry.target_id ? `${entry.target_type} ${entry.target_id}` : entry.target_type),
    el("td", {}, describe(entry, names)),
  );
}

async function showPage(wanted) {
  let result;
  let names;
  try {
    const params = new URLSearchParams(query);
    params.set("page", wanted);
    params.set("page_size", PAGE_SIZE);
    [result, names] = await Promise.all([request(`/api/v1/admin/audit?${params}`, { token: token() }), agentNames()]);
  } catch (failure) {
    $("audit-info").textContent = `Not loaded: ${failure.message}`;
    return;
  }
  page = wanted;
  const rows = result.items.map((entry) => entryRow(entry, names));
  const none = el("tr", {}, el("td", { colspan: HEADINGS.length }, "No entry matches"));
  $("audit-log").tBodies[0].replaceChildren(...(rows.length ? rows : [none]));
  const first = result.total ? (page - 1) * PAGE_SIZE + 1 : 0;
  $("audit-info").textContent = `${first}–${(page - 1) * PAGE_SIZE + result.items.length} of ${result.total}`;
  $("audit-previous").disabled = page === 1;
  $("audit-next").disabled = page * PAGE_SIZE >= result.total;
}

function draw() {
  const reload = () => showPage(1);
  container.replaceChildren(
    originsSection(token, agentNames, reload),
    el(
      "section",
      { "aria-labelledby": "records-title" },
      el("h2", { id: "records-title" }, "Records: export, erasure, audit log"),
      exportForm(token, reload),
      eraseForm(token, reload),
      auditTable(),
    ),
  );
  reload();
}

// The dashboard is drawn into #admin after sign-in (its "updated" line is there); follow it.
function follow() {
  const signedIn = Boolean(token() && $("updated"));
  if (signedIn && !container.firstChild) draw();
  else if (!signedIn && container.firstChild) container.replaceChildren();
}

new MutationObserver(follow).observe($("admin"), { childList: true });
follow();
