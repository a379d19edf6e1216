/* How the admin page writes its figures, and a table row of them (all set as text). One
 * formatter per kind of figure, used by the tiles, the tables, the charts' value axes and their
 * exact readouts alike: replies/s (`rate`), response times (`ms`), shares (`pct`). */

import { el } from "../shared/dom.js";

const pad = (n) => String(n).padStart(2, "0");
const threeDigits = new Intl.NumberFormat("en", { maximumSignificantDigits: 3 });
const dayMonth = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short" });

export const fmt = {
  ms: (v) => (v == null ? "–" : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`),
  pct: (v) => (v == null ? "–" : `${(v * 100).toFixed(1)}%`),
  num: (v) => (v == null ? "–" : String(v)),
  count: (v) => (v == null ? "–" : v.toLocaleString("en")), // with thousands separators: "14,386"
  // Three significant digits, no trailing zeros: "0.0333", "0.5", "12.3" (axis: "0", "0.5", "1").
  rate: (v) => (v == null ? "–" : threeDigits.format(v)),
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

// The browser's time zone, as the charts' time axis names it: "UTC", or the zone's name and its
// offset at `unixSeconds` ("Europe/Amsterdam, UTC+02:00"), the offset alone if it has no name.
export function timeZone(unixSeconds) {
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const minutes = -new Date(unixSeconds * 1000).getTimezoneOffset();
  const sign = minutes < 0 ? "-" : "+";
  const offset = `UTC${sign}${pad(Math.floor(Math.abs(minutes) / 60))}:${pad(Math.abs(minutes) % 60)}`;
  if (minutes === 0 && (name === "UTC" || name === "Etc/UTC")) return "UTC";
  return name ? `${name}, ${offset}` : offset;
}

/* A bucket of a chart from `start`, `step` seconds long: "14:05:10 to 14:05:20" (whole minutes
 * without seconds), with the day ("12 Apr, 23:10 to 23:11") when it is not the day of `today`. */
export function bucketSpan(start, step, today) {
  const seconds = step % 60 !== 0;
  const span = `${clock(start, { seconds })} to ${clock(start + step, { seconds })}`;
  const day = (t) => new Date(t * 1000).toDateString();
  return day(start) === day(today) ? span : `${dayMonth.format(new Date(start * 1000))}, ${span}`;
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
