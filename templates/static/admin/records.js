/* The admin page's data duties: export transcripts for a date range (CSV or JSON, from
 * /api/v1/reports/transcripts) and erase a customer's conversations (/api/v1/admin/erasures).
 * Refusals show the API's own reason (a range over the limit says the limit). */

import { ApiError, request } from "../shared/api.js";
import { el } from "../shared/dom.js";

const DAY_MS = 86400000;
const isoDay = (date) => date.toISOString().slice(0, 10);

// The export form; `done()` runs after each export (the audit log shows it).
export function exportForm(token, done) {
  const today = new Date();
  const from = el("input", { id: "export-from", type: "date", required: true, value: isoDay(new Date(today - 7 * DAY_MS)) });
  const to = el("input", { id: "export-to", type: "date", required: true, value: isoDay(today) });
  const format = el(
    "select",
    { id: "export-format" },
    el("option", { value: "csv" }, "CSV"),
    el("option", { value: "json" }, "JSON"),
  );
  const status = el("p", { id: "export-status", role: "status" }, "");
  const form = el(
    "form",
    { "aria-labelledby": "export-title" },
    el("h3", { id: "export-title" }, "Export transcripts"),
    el("label", { for: "export-from" }, "From "),
    from,
    el("label", { for: "export-to" }, " to (inclusive) "),
    to,
    el("label", { for: "export-format" }, " as "),
    format,
    " ",
    el("button", { type: "submit" }, "Export"),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    // Whole days in UTC: the end date is included.
    const start = `${from.value}T00:00:00Z`;
    const end = new Date(Date.parse(`${to.value}T00:00:00Z`) + DAY_MS).toISOString();
    const query = new URLSearchParams({ from: start, to: end, format: format.value });
    status.textContent = "Exporting…";
    try {
      const response = await fetch(`/api/v1/reports/transcripts?${query}`, {
        headers: { Authorization: `Bearer ${token()}` },
        cache: "no-store",
      });
      if (!response.ok) {
        const body = await response.json().catch(() => null);
        throw new ApiError(response.status, body && body.detail ? body.detail : `The server answered ${response.status}.`);
      }
      const blob = await response.blob();
      const name = `transcripts-${from.value}-${to.value}.${format.value}`;
      const link = el("a", { href: URL.createObjectURL(blob), download: name });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 60000);
      status.textContent = `Exported ${name} (${blob.size} bytes).`;
    } catch (failure) {
      status.textContent = `Not exported: ${failure.message}`;
    }
    done();
  });
  return form;
}

// The erasure form: one conversation by id, or a customer by a field of their context.
export function eraseForm(token, done) {
  const conversation = el("input", { id: "erase-conversation", autocomplete: "off", size: 38 });
  const field = el("input", { id: "erase-field", autocomplete: "off", placeholder: "email", size: 10 });
  const value = el("input", { id: "erase-value", autocomplete: "off", size: 28 });
  const status = el("p", { id: "erase-status", role: "status" }, "");
  const form = el(
    "form",
    { "aria-labelledby": "erase-title" },
    el("h3", { id: "erase-title" }, "Erase a customer's conversations"),
    el(
      "p",
      { class: "hint" },
      "Message texts, the customer's details, notes and rating comments go for good; counts and timings stay.",
    ),
    el("label", { for: "erase-conversation" }, "Conversation id "),
    conversation,
    el("label", { for: "erase-field" }, " or customer field "),
    field,
    el("label", { for: "erase-value" }, " equal to "),
    value,
    " ",
    el("button", { type: "submit" }, "Erase"),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = conversation.value.trim()
      ? { conversation_id: conversation.value.trim() }
      : { customer_field: field.value.trim() || null, value: value.value.trim() || null };
    try {
      const result = await request("/api/v1/admin/erasures", { method: "POST", body, token: token() });
      const count = result.erased.length;
      status.textContent =
        count === 0 ? "No conversation matched." : `Erased ${count} conversation${count === 1 ? "" : "s"}.`;
      form.reset();
    } catch (failure) {
      status.textContent = `Not erased: ${failure.message}`;
    }
    done();
  });
  return form;
}
