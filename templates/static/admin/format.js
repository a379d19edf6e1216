/* How the admin page writes its figures, and a table row of them (all set as text). */

import { el } from "../shared/dom.js";

export const fmt = {
  ms: (v) => (v == null ? "–" : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`),
  pct: (v) => (v == null ? "–" : `${(v * 100).toFixed(1)}%`),
  num: (v) => (v == null ? "–" : String(v)),
  qps: (v) => (v == null ? "–" : v.toFixed(v < 1 ? 3 : 2)),
};

export function row(cell, values) {
  return el("tr", {}, ...values.map((v) => el(cell, {}, v)));
}
