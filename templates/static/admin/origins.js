/* The admin page's widget origins: the pages that may embed the chat widget besides this
 * server's own. Those of PREFIXDESK_WIDGET_ORIGINS are listed (a restart changes them); the ones
 * added here (/api/v1/admin/widget-origins) can be removed, and new ones allowed. The API checks
 * the scheme://host[:port] form and says how to write an origin it refuses; each change is in
 * the audit log. */

import { request } from "../shared/api.js";
import { el } from "../shared/dom.js";
import { row } from "./format.js";

const HEADINGS = ["Origin", "Added by", "Added", ""];
const when = new Intl.DateTimeFormat("en-GB", { dateStyle: "medium", timeStyle: "short" });

function originRows(list, names, remove) {
  const configured = list.configured.map((origin) =>
    row("td", [origin, "PREFIXDESK_WIDGET_ORIGINS", "at start-up", ""]),
  );
  const added = list.added.map((entry) => {
    const button = el("button", { type: "button", "aria-label": `Remove ${entry.origin}` }, "Remove");
    button.addEventListener("click", () => remove(entry));
    const by = entry.added_by == null ? "–" : names.get(entry.added_by) ?? `agent ${entry.added_by}`;
    return row("td", [entry.origin, by, when.format(new Date(entry.created_at)), button]);
  });
  const rows = [...configured, ...added];
  return rows.length ? rows : [el("tr", {}, el("td", { colspan: HEADINGS.length }, "Only this server's own pages"))];
}

// The section; `names()` maps agent ids to names, `done()` runs after each change (the audit log).
export function originsSection(token, names, done) {
  const input = el("input", {
    id: "origin-new",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "https://shop.example.com:8443",
    size: 36,
  });
  const status = el("p", { id: "origins-status", role: "status" }, "");
  const error = el("p", { id: "origins-error", class: "error", role: "alert" }, "");
  const table = el(
    "table",
    { id: "origins", "aria-labelledby": "origins-title" },
    el("thead", {}, row("th", HEADINGS)),
    el("tbody", {}),
  );

  async function show() {
    try {
      const list = await request("/api/v1/admin/widget-origins", { token: token() });
      table.tBodies[0].replaceChildren(...originRows(list, await names(), remove));
    } catch (failure) {
      error.textContent = `Not loaded: ${failure.message}`;
    }
  }

  async function change(doing, message) {
    error.textContent = "";
    status.textContent = "";
    try {
      await doing();
      status.textContent = message;
      done();
      await show();
      return true;
    } catch (failure) {
      error.textContent = failure.message;
      return false;
    }
  }

  async function remove(entry) {
    const path = `/api/v1/admin/widget-origins/${entry.id}`;
    await change(() => request(path, { method: "DELETE", token: token() }), `Removed ${entry.origin}.`);
  }

  const form = el(
    "form",
    { "aria-labelledby": "origins-add-title", class: "origins-add" },
    el("h4", { id: "origins-add-title" }, "Allow another origin"),
    el("label", { for: "origin-new" }, "Origin (scheme://host:port) "),
    input,
    " ",
    el("button", { type: "submit" }, "Allow"),
    status,
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let added = null;
    const body = { origin: input.value.trim() };
    const adding = async () => {
      added = await request("/api/v1/admin/widget-origins", { method: "POST", body, token: token() });
    };
    if (await change(adding, "")) {
      status.textContent = `Allowed ${added.origin}: its pages may embed the widget now.`;
      input.value = "";
    } else input.select();
  });

  show();
  return el(
    "section",
    { "aria-labelledby": "origins-title", class: "origins" },
    el("h2", { id: "origins-title" }, "Widget origins"),
    el(
      "p",
      { class: "hint" },
      "Pages of these origins may embed the chat widget, besides this server's own. Scheme, host and " +
        "port must match the page's exactly. Origins added here take effect at once in every app process.",
    ),
    table,
    form,
  );
}
