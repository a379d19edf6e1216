/* The customers' thumbs up and down on the bots' replies, per bot: the replies written in the
 * chosen window, as they are rated now, from /api/v1/reports/feedback. */

import { $, el } from "../shared/dom.js";
import { fmt, row } from "./format.js";

const HEADINGS = ["Bot", "Helpful", "Not helpful", "Share helpful"];

export function feedbackSection() {
  return el(
    "section",
    { class: "feedback", "aria-labelledby": "feedback-title" },
    el("h2", { id: "feedback-title" }, "Customer feedback per bot"),
    el(
      "table",
      { id: "feedback-per-bot" },
      el("thead", {}, row("th", HEADINGS)),
      el("tbody", {}),
      el("tfoot", {}),
    ),
  );
}

// The figures' path for the last `seconds`.
export function feedbackPath(seconds) {
  const since = new Date(Date.now() - seconds * 1000).toISOString();
  return `/api/v1/reports/feedback?from=${encodeURIComponent(since)}`;
}

const cells = (name, counts) => [name, fmt.num(counts.up), fmt.num(counts.down), fmt.pct(counts.up_share)];

export function showFeedback(figures) {
  const table = $("feedback-per-bot");
  const bots = Object.entries(figures.per_bot);
  table
    .querySelector("tbody")
    .replaceChildren(
      ...(bots.length
        ? bots.map(([bot, counts]) => row("td", cells(bot, counts)))
        : [el("tr", {}, el("td", { colspan: HEADINGS.length }, "No rated replies in this window"))]),
    );
  table.querySelector("tfoot").replaceChildren(row("th", cells("All bots", figures.total)));
}
