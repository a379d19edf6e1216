/* How the admin page writes its figures, and a table row of them (all set as text). */

import { el } from "../shared/dom.js";

const pad = (n) => String(n).padStart(2, "0");

export const fmt = {
  ms: (v) => (v == null ? "–" : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`),
  pct: (v) => (v == null ? "–" : `${(v * 100).toFixed(1)}%`),
  num: (v) => (v == null ? "–" : String(v)),
  count: (v) => (v == null ? "–" : v.toLocaleString("en")), // with thousands separators: "14,386"
  rate: (v) => (v == null ? "–" : v.toFixed(v < 1 ? 3 : 2)),
  // A duration in seconds, as people say it: "45 s", "4 min 10 s", "2 h 5 min".
  seconds: (v) => {
    if (v == null) return "–";
    const s = Math.round(v);
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
    return `${Math.floor(s / 3600)} h ${pad(Math.floor((s % 3600) / 60))} min`;
  },
};

// A time of day on the 24-hour clock, in the browser's time zone: "14:05" (or "14:05:09").
export function clock(unixSeconds, { seconds = false } = {}) {
  const moment = new Date(unixSeconds * 1000);
  const time = `${pad(moment.getHours())}:${pad(moment.getMinutes())}`;
  return seconds ? `${time}:${pad(moment.getSeconds())}` : time;
}

export function row(cell, values) {
  return el("tr", {}, ...values.map((v) => el(cell, {}, v)));
}

// A table's body: a row of cells per item, or one row across `columns` saying there is none.
export function fillBody(table, rowsOfCells, columns, none) {
  table
    .querySelector("tbody")
    .replaceChildren(
      ...(rowsOfCells.length
        ? rowsOfCells.map((cells) => row("td", cells))
        : [el("tr", {}, el("td", { colspan: columns }, none))]),
    );
}
