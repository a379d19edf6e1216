/* The admin page's charts: SVG over a time axis from the window's start to now, in the
 * browser's time zone, which the axis names ("time (Europe/Amsterdam, UTC+02:00)").
 *
 * Each point is a bucket of the series (10 s or 1 min). A bucket in which nothing was measured
 * has no value, and the line breaks there: a path joins only buckets next to each other, so no
 * line crosses an idle period, and a lone bucket is a short stroke across its own width, not a
 * loose dot. Counts are drawn as bars, one per bucket with something in it. Each line has its
 * own class (colour and dash, in admin.css) and an entry in the legend under the chart; a
 * bucket's exact figures show on hover and on keyboard focus (./chart-tip.js).
 */

import { $, el, svgEl } from "../shared/dom.js";
import { showTip, tipReadout } from "./chart-tip.js";
import { clock, timeZone } from "./format.js";

const PLOT = { left: 44, right: 392, top: 8, bottom: 146 };
const HEIGHT = 180; // the plot, the tick labels under it, and the axis' name under them
const LONE_MIN_WIDTH = 3; // a lone bucket's stroke, however narrow its bucket
const TICK_STEPS_S = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600];

// A figure with an empty chart, the legend of `lines` ({key, label}) and the exact readout.
export function chartFigure(id, title, lines) {
  const svg = svgEl("svg", {
    id,
    viewBox: `0 0 400 ${HEIGHT}`,
    role: "img",
    "aria-label": `${title} over time: the arrow keys step through its buckets`,
  });
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
  return el("figure", { class: "chart" }, el("figcaption", {}, title), svg, legend, tipReadout(svg, lines));
}

// Round numbers for the value axis: 1, 2 or 5 times a power of ten, at or above `value`.
function niceMax(value) {
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= value);
}

/* Draws `series` (points with `t`, the bucket's start in seconds) from `from` to `to`:
 * `lines` ({key, get(point)}) are drawn in order, so the last is on top; `bars` ({get}) as bars.
 * `format` writes a value, on the value axis and in the exact readout alike. */
export function drawChart(id, { from, to, step, series, lines = [], bars = null, format }) {
  const svg = $(id);
  svg.replaceChildren();
  const getters = bars ? [bars.get] : lines.map((line) => line.get);
  const values = series.flatMap((p) => getters.map((get) => get(p))).filter((v) => v != null && v > 0);
  const max = values.length ? niceMax(Math.max(...values)) : 1;
  const x = (t) => PLOT.left + ((Math.min(Math.max(t, from), to) - from) / (to - from)) * (PLOT.right - PLOT.left);
  const y = (v) => PLOT.bottom - (v / max) * (PLOT.bottom - PLOT.top);
  const plot = { ...PLOT, from, to, step, x, y };
  drawAxes(svg, plot, max, format);
  if (bars) drawBars(svg, plot, series, bars.get);
  for (const line of lines) drawLine(svg, plot, series, line);
  if (!values.length) {
    const centre = { x: (PLOT.left + PLOT.right) / 2, y: (PLOT.top + PLOT.bottom) / 2, class: "empty" };
    svg.append(svgEl("text", centre, "nothing in this window"));
  }
  const marks = bars ? [{ key: "bar", get: bars.get, bar: true }] : lines;
  showTip(svg, { plot, series, marks, format });
}

function drawAxes(svg, { from, to, x, y }, max, format) {
  for (const level of [0, max / 2, max]) {
    svg.append(
      svgEl("line", { x1: PLOT.left, x2: PLOT.right, y1: y(level), y2: y(level), class: "grid" }),
      svgEl("text", { x: PLOT.left - 4, y: y(level) + 3, class: "value-label" }, format(level)),
    );
  }
  const tick = TICK_STEPS_S.find((s) => (to - from) / s <= 5) || TICK_STEPS_S.at(-1);
  for (let t = Math.ceil(from / tick) * tick; t <= to; t += tick) {
    svg.append(
      svgEl("line", { x1: x(t), x2: x(t), y1: PLOT.bottom, y2: PLOT.bottom + 4, class: "tick" }),
      svgEl("text", { x: x(t), y: PLOT.bottom + 15, class: "tick-label" }, clock(t)),
    );
  }
  const name = { x: PLOT.right, y: HEIGHT - 4, class: "axis-title" };
  svg.append(svgEl("text", name, `time (${timeZone(to)})`));
}

function drawBars(svg, { step, x, y }, series, get) {
  for (const point of series) {
    const value = get(point);
    if (!value) continue;
    const left = x(point.t);
    const width = Math.max(1, x(point.t + step) - left - 0.5);
    const height = PLOT.bottom - y(value);
    svg.append(svgEl("rect", { x: left, y: y(value), width, height, class: "bar", "data-t": point.t }));
  }
}

/* One path per run of buckets next to each other: through the buckets' middles, or for a lone
 * bucket a stroke across it, so the breaks between paths are the gaps in the data. */
function drawLine(svg, { step, x, y }, series, line) {
  for (const run of segments(series, line.get)) {
    const [first] = run;
    const last = run.at(-1);
    let d;
    if (run.length === 1) {
      const middle = x(first.t + step / 2);
      const half = Math.max(x(first.t + step) - x(first.t), LONE_MIN_WIDTH) / 2;
      d = `M${middle - half},${y(first.value)} H${middle + half}`;
    } else {
      d = run.map((p, i) => `${i ? "L" : "M"}${x(p.t + step / 2)},${y(p.value)}`).join(" ");
    }
    const path = { d, class: `series line-${line.key}`, "data-from": first.t, "data-to": last.t };
    svg.append(svgEl("path", path));
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
