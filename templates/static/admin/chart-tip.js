/* A chart's exact figures, for one bucket at a time: point at the chart, or focus it (Tab) and
 * step with the arrow keys (Home and End for the first and last bucket with something in it).
 * A box in the chart names the bucket's time and each line's value, written by the chart's own
 * formatter, and the same words are the line under the chart, the chart's accessible
 * description (read out as they change). The charts are redrawn at every poll: the bucket
 * chosen stays chosen while it is in the window.
 */

import { el, svgEl } from "../shared/dom.js";
import { bucketSpan, timeZone } from "./format.js";

const SNAP = 6; // pointing this close (in chart units) to a bucket with figures shows that one
const KEYS = new Set(["ArrowLeft", "ArrowRight", "Home", "End", "Escape"]);
const tips = new WeakMap(); // each chart's svg: its labels, what was drawn and the chosen bucket

// The readout under a chart, and the chart's svg made focusable and listened to.
export function tipReadout(svg, labels) {
  const readout = el("p", { id: `${svg.id}-readout`, class: "readout", "aria-live": "polite" });
  const tip = { svg, readout, labels, drawn: null, chosen: null, pointing: false, focused: false };
  tips.set(svg, tip);
  svg.setAttribute("tabindex", "0");
  svg.setAttribute("aria-describedby", readout.id);
  svg.addEventListener("pointermove", (event) => {
    tip.pointing = true;
    choose(tip, bucketAt(tip, event));
  });
  svg.addEventListener("pointerleave", () => {
    tip.pointing = false;
    if (!tip.focused) choose(tip, null);
  });
  svg.addEventListener("focus", () => {
    tip.focused = true;
    choose(tip, tip.chosen ?? withFigures(tip).at(-1) ?? null);
  });
  svg.addEventListener("blur", () => {
    tip.focused = false;
    if (!tip.pointing) choose(tip, null);
  });
  svg.addEventListener("keydown", (event) => {
    if (!KEYS.has(event.key) || !tip.drawn) return;
    event.preventDefault();
    choose(tip, keyed(tip, event.key));
  });
  return readout;
}

// After a redraw: what is drawn now (`plot`, `series`, `marks` and `format`), the tip again.
export function showTip(svg, drawn) {
  const tip = tips.get(svg);
  if (!tip) return;
  tip.drawn = drawn;
  const gone = tip.chosen != null && !drawn.series.some((p) => p.t === tip.chosen); // out of the window
  choose(tip, !gone ? tip.chosen : tip.focused ? (withFigures(tip).at(-1) ?? null) : null);
}

const hasFigure = (mark, point) => {
  const value = mark.get(point);
  return value != null && (!mark.bar || value > 0); // a bar of nothing is no bar
};

// The starts of the buckets in which something was measured, in order.
function withFigures(tip) {
  if (!tip.drawn) return [];
  const { series, marks } = tip.drawn;
  return series.filter((p) => marks.some((m) => hasFigure(m, p))).map((p) => p.t);
}

function keyed(tip, key) {
  const starts = withFigures(tip);
  if (key === "Escape" || !starts.length) return null;
  if (key === "Home") return starts[0];
  if (key === "End" || tip.chosen == null) return starts.at(-1);
  const at = starts.findIndex((t) => t >= tip.chosen);
  const here = at === -1 ? starts.length : at;
  if (key === "ArrowLeft") return starts[Math.max(here - 1, 0)];
  return starts[Math.min(starts[here] === tip.chosen ? here + 1 : here, starts.length - 1)];
}

// The bucket under the pointer, or one with figures close by; null off the plot.
function bucketAt(tip, event) {
  if (!tip.drawn) return null;
  const { plot, series } = tip.drawn;
  const at = new DOMPoint(event.clientX, event.clientY).matrixTransform(tip.svg.getScreenCTM().inverse());
  if (at.x < plot.left || at.x > plot.right) return null;
  const middle = (t) => plot.x(t + plot.step / 2);
  const near = withFigures(tip).filter((t) => Math.abs(middle(t) - at.x) <= SNAP);
  if (near.length) return near.reduce((a, b) => (Math.abs(middle(b) - at.x) < Math.abs(middle(a) - at.x) ? b : a));
  const under = series.find((p) => plot.x(p.t) <= at.x && at.x < plot.x(p.t + plot.step));
  return under ? under.t : null;
}

function choose(tip, start) {
  tip.chosen = start;
  tip.svg.querySelector(".tip")?.remove();
  const point = tip.drawn && start != null ? tip.drawn.series.find((p) => p.t === start) : null;
  if (!point) {
    tip.chosen = null;
    const none = tip.focused && tip.drawn && !withFigures(tip).length ? "Nothing in this window." : "";
    if (tip.readout.textContent !== none) tip.readout.textContent = none;
    return;
  }
  const { plot, marks, format } = tip.drawn;
  const when = bucketSpan(point.t, plot.step, plot.to);
  const figures = tip.labels.map(({ key, label }) => {
    const mark = marks.find((m) => m.key === key);
    return `${label}: ${mark && hasFigure(mark, point) ? format(mark.get(point)) : "–"}`;
  });
  const anything = marks.some((m) => hasFigure(m, point));
  const lines = anything ? figures : ["nothing in this bucket"];
  const said = `${when} (${timeZone(point.t)}): ${lines.join(" · ")}`;
  if (tip.readout.textContent !== said) tip.readout.textContent = said;
  const box = tipBox(tip.drawn, point, [when, ...lines]);
  tip.svg.append(box);
  place(box, tip.drawn.plot);
}

// The guide at the bucket, a dot on each line's value, and the box of words beside them.
function tipBox({ plot, marks }, point, lines) {
  const middle = plot.x(point.t + plot.step / 2);
  const group = svgEl("g", { class: "tip", "aria-hidden": "true", "data-t": point.t });
  group.append(svgEl("line", { x1: middle, x2: middle, y1: plot.top, y2: plot.bottom, class: "tip-guide" }));
  for (const mark of marks) {
    if (mark.bar || !hasFigure(mark, point)) continue;
    const dot = { cx: middle, cy: plot.y(mark.get(point)), r: 3.5, class: `tip-dot line-${mark.key}` };
    group.append(svgEl("circle", dot));
  }
  const text = svgEl("text", { class: "tip-text", x: 0, y: plot.top + 12 });
  lines.forEach((line, i) => text.append(svgEl("tspan", { x: 0, dy: i ? 12 : 0 }, line)));
  group.append(svgEl("rect", { class: "tip-box", rx: 3 }), text);
  return group;
}

// The box beside the guide, on the side with room: measured once its words are in the chart.
function place(group, plot) {
  const [guide, text, box] = [".tip-guide", ".tip-text", ".tip-box"].map((s) => group.querySelector(s));
  const middle = Number(guide.getAttribute("x1"));
  const size = text.getBBox();
  const width = size.width + 8;
  const left = middle + 6 + width <= plot.right + 8 ? middle + 6 : middle - 6 - width;
  for (const node of [text, ...text.children]) node.setAttribute("x", left + 4);
  for (const [name, value] of [["x", left], ["y", size.y - 3], ["width", width], ["height", size.height + 6]]) {
    box.setAttribute(name, value);
  }
}
