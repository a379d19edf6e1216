/* The admin page's records section: the audit log of what agents and admins did (newest first,
 * from /api/v1/admin/audit, a page at a time), with the transcript export and the erasure forms.
 * It draws itself below the dashboard once an admin has signed in, and goes on sign-out. */

import { request, savedToken } from "../shared/api.js";
import { $, el } from "../shared/dom.js";
import { row } from "./format.js";
import { eraseForm, exportForm } from "./records.js";

const PAGE_SIZE = 20;
const HEADINGS = ["When", "Who", "Action", "Target", "Details"];
const token = savedToken; // the tab's one sign-in (../shared/signin.js)
const container = $("records");
let page = 1;

const describe = (details) =>
  Object.entries(details)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([key, value]) => `${key}: ${value}`)
    .join(", ");

function auditTable() {
  const previous = el("button", { type: "button", id: "audit-previous" }, "Newer");
  const next = el("button", { type: "button", id: "audit-next" }, "Older");
  previous.addEventListener("click", () => showPage(page - 1));
  next.addEventListener("click", () => showPage(page + 1));
  return el(
    "div",
    {},
    el("h3", { id: "audit-title" }, "Audit log"),
    el("table", { id: "audit-log", "aria-labelledby": "audit-title" }, el("thead", {}, row("th", HEADINGS)), el("tbody", {})),
    el("p", {}, previous, " ", el("span", { id: "audit-info", "aria-live": "polite" }, ""), " ", next),
  );
}

async function showPage(wanted) {
  let result;
  try {
    result = await request(`/api/v1/admin/audit?page=${wanted}&page_size=${PAGE_SIZE}`, { token: token() });
  } catch (failure) {
    $("audit-info").textContent = `not loaded: ${failure.message}`;
    return;
  }
  page = wanted;
  $("audit-log").tBodies[0].replaceChildren(
    ...result.items.map((entry) =>
      row("td", [
        new Date(entry.created_at).toLocaleString(),
        entry.actor_name,
        entry.action,
        entry.target_id ? `${entry.target_type} ${entry.target_id}` : entry.target_type,
        describe(entry.details),
      ]),
    ),
  );
  const first = result.total ? (page - 1) * PAGE_SIZE + 1 : 0;
  $("audit-info").textContent = `${first}–${(page - 1) * PAGE_SIZE + result.items.length} of ${result.total}`;
  $("audit-previous").disabled = page === 1;
  $("audit-next").disabled = page * PAGE_SIZE >= result.total;
}

function draw() {
  const reload = () => showPage(1);
  container.replaceChildren(
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
