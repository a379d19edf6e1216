/* The admin page's charts: SVG over a time axis from the window's start to now.
 *
 * Each point is a bucket of the series (10 s or 1 min). A bucket in which nothing was measured
 * has no value, and a line stops there: a segment joins only buckets next to each other, so no
 * line crosses an idle period (a lone bucket is a dot). Counts are drawn as bars, one per bucket
 * with something in it. Each line has its own class (colour and dash, in admin.css) and an
 * entry in the legend under the chart.
 */

import { $, el, svgEl } from "../shared/dom.js";
import { clock } from "./format.js";

const LEFT = 44;
const RIGHT = 392;
const TOP = 8;
const BOTTOM = 146;
const TICK_STEPS_S = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600];

// A figure with an empty chart and the legend of `lines` ({key, label}).
export function chartFigure(id, title, lines) {
  const svg = svgEl("svg", { id, viewBox: "0 0 400 166", role: "img", "aria-label": title });
  const legend = el(
    "ul",
    { class: "legend", "aria-label": `${title}: legend` },
    lines.map(({ key, label }) => {
      const sample = svgEl("svg", { viewBox: "0 0 24 8", "aria-hidden": "true" });
      sample.append(
        key === "bar"
          ? svgEl("rect", { x: 6, y: 0, width: 12, height: 8, class: "bar" })
          : svgEl("line", { x1: 0, x2: 24, y1: 4, y2: 4, class: `series line-${key}` }),
      );
      return el("li", { dataset: { key } }, sample, label);
    }),
  );
  return el("figure", { class: "chart" }, el("figcaption", {}, title), svg, legend);
}

// Round numbers for the value axis: 1, 2 or 5 times a power of ten, at or above `value`.
function niceMax(value) {
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= value);
}

/* Draws `series` (points with `t`, the bucket's start in seconds) from `from` to `to`:
 * `lines` ({key, get(point)}) are drawn in order, so the last is on top; `bars` ({get}) as bars.
 * `format` writes a value for the value axis. */
export function drawChart(id, { from, to, step, series, lines = [], bars = null, format }) {
  const svg = $(id);
  svg.replaceChildren();
  const getters = bars ? [bars.get] : lines.map((line) => line.get);
  const values = series.flatMap((p) => getters.map((get) => get(p))).filter((v) => v != null && v > 0);
  const max = values.length ? niceMax(Math.max(...values)) : 1;
  const x = (t) => LEFT + ((Math.min(Math.max(t, from), to) - from) / (to - from)) * (RIGHT - LEFT);
  const y = (v) => BOTTOM - (v / max) * (BOTTOM - TOP);
  for (const level of [0, max / 2, max]) {
    svg.append(
      svgEl("line", { x1: LEFT, x2: RIGHT, y1: y(level), y2: y(level), class: "grid" }),
      svgEl("text", { x: LEFT - 4, y: y(level) + 3, class: "value-label" }, format(level)),
    );
  }
  const tick = TICK_STEPS_S.find((s) => (to - from) / s <= 5) || TICK_STEPS_S.at(-1);
  for (let t = Math.ceil(from / tick) * tick; t <= to; t += tick) {
    svg.append(
      svgEl("line", { x1: x(t), x2: x(t), y1: BOTTOM, y2: BOTTOM + 4, class: "tick" }),
      svgEl("text", { x: x(t), y: BOTTOM + 15, class: "tick-label" }, clock(t)),
    );
  }
  const middle = (t) => x(t + step / 2);
  if (bars) {
    for (const point of series) {
      const value = bars.get(point);
      if (!value) continue;
      const left = x(point.t);
      const width = Math.max(1, x(point.t + step) - left - 0.5);
      svg.append(
        svgEl("rect", {
          x: left,
          y: y(value),
          width,
          height: BOTTOM - y(value),
          class: "bar",
          "data-t": point.t,
        }),
      );
    }
  }
  for (const line of lines) {
    for (const segment of segments(series, line.get)) {
      const [first] = segment;
      const last = segment.at(-1);
      const span = { class: `series line-${line.key}`, "data-from": first.t, "data-to": last.t };
      const points = segment.map((p) => `${middle(p.t)},${y(p.value)}`).join(" ");
      svg.append(
        segment.length === 1
          ? svgEl("circle", { ...span, cx: middle(first.t), cy: y(first.value), r: 2.5 })
          : svgEl("polyline", { ...span, points }),
      );
    }
  }
  if (!values.length) {
    const centre = { x: (LEFT + RIGHT) / 2, y: (TOP + BOTTOM) / 2, class: "empty" };
    svg.append(svgEl("text", centre, "nothing in this window"));
  }
}

// Runs of buckets next to each other that have a value: [{t, value}, ...] each.
function segments(series, get) {
  const runs = [];
  let run = [];
  for (const point of series) {
    const value = get(point);
    if (value == null) {
      if (run.length) runs.push(run);
      run = [];
    } else {
      run.push({ t: point.t, value });
    }
  }
  if (run.length) runs.push(run);
  return runs;
}
