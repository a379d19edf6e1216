/* The bots' replies per bot in the chosen window, from /api/v1/reports/replies: how many, how
 * many the reply checks flagged as doubtful, and the customers' thumbs up and down on them (as
 * they are rated now). */

import { $, el } from "../shared/dom.js";
import { fillBody, fmt, row } from "./format.js";

const HEADINGS = ["Bot", "Replies", "Doubtful", "Helpful", "Not helpful", "Share helpful"];

export function repliesSection() {
  return el(
    "section",
    { class: "feedback", "aria-labelledby": "replies-title" },
    el("h2", { id: "replies-title" }, "Replies per bot: doubts and customer feedback"),
    el(
      "p",
      { class: "hint" },
      "Doubtful: replies the checks flagged (a figure the policy does not state, or states of something " +
        "else); agents see why in the transcript.",
    ),
    el(
      "table",
      { id: "replies-per-bot" },
      el("thead", {}, row("th", HEADINGS)),
      el("tbody", {}),
      el("tfoot", {}),
    ),
  );
}

const cells = (name, counts) => [
  name,
  fmt.num(counts.replies),
  `${fmt.num(counts.doubtful)} (${fmt.pct(counts.doubtful_share)})`,
  fmt.num(counts.up),
  fmt.num(counts.down),
  fmt.pct(counts.up_share),
];

export function showReplies(figures) {
  const table = $("replies-per-bot");
  const bots = Object.entries(figures.per_bot);
  const perBot = bots.map(([bot, counts]) => cells(bot, counts));
  fillBody(table, perBot, HEADINGS.length, "No bot replies in this window");
  table.querySelector("tfoot").replaceChildren(row("th", cells("All bots", figures.total)));
}
