/* The admin page's transcript export: a date range of whole UTC days, both ends included (CSV
 * or JSON, from /api/v1/reports/transcripts, which takes the end exclusive). Refusals show the
 * API's own reason (a range over the limit says the limit). */

import { ApiError } from "../shared/api.js";
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
