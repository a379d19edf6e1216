/* The support figures of the conversations started in the chosen window, from /api/v1/reports:
 * the share handed to a person, how long until a person first answered and until resolved
 * (both from the handoff on), resolved by the bot, the customers' thumbs on the replies, and
 * their 1-5 ratings of resolved conversations given in the window. */

import { $, el } from "../shared/dom.js";
import { fillBody, fmt, row } from "./format.js";
import { setTile, tile } from "./tiles.js";

const HEADINGS = [
  "Bot",
  "Conversations",
  "Handed off",
  "First human response (median)",
  "Resolution (median)",
  "Resolved by the bot",
];

export function supportSection() {
  return el(
    "section",
    { class: "group", "aria-labelledby": "support-title" },
    el("h2", { id: "support-title" }, "Support: conversations started in the window"),
    el(
      "p",
      { class: "hint" },
      "Human times run from the handoff (the bot's time is not counted) and cover the handed-off " +
        "conversations a person has answered or resolved so far.",
    ),
    el(
      "div",
      { class: "tiles" },
      tile("conversations", "Conversations"),
      tile("handoff-rate", "Handoff rate"),
      tile("first-response", "First human response"),
      tile("resolution", "Resolution time"),
      tile("resolved-by-bot", "Resolved by the bot"),
      tile("helpful", "Replies rated helpful"),
      tile("satisfaction", "Satisfaction"),
    ),
    el("table", { id: "support-per-bot" }, el("thead", {}, row("th", HEADINGS)), el("tbody", {})),
  );
}

// The report's path for the last `seconds`.
export function reportPath(seconds, suffix = "") {
  const since = new Date(Date.now() - seconds * 1000).toISOString();
  return `/api/v1/reports${suffix}?from=${encodeURIComponent(since)}`;
}

const timeSub = (t) => (t.count ? `mean ${fmt.seconds(t.mean)} · ${t.count} conversation(s)` : "none yet");

// The customers' ratings (1 to 5) of resolved conversations: their mean and how many.
function satisfaction(ratings) {
  if (!ratings.count) return ["–", "no ratings in the window"];
  return [`${Number(ratings.mean).toFixed(2)} / 5`, `${ratings.count} rating(s)`];
}

export function showSupport(report) {
  const t = report.total;
  setTile("conversations", fmt.num(t.conversations), `${fmt.num(t.messages.user ?? 0)} customer messages`);
  setTile("handoff-rate", fmt.pct(t.handoff_rate), `${t.handed_off} of ${t.conversations} handed to a person`);
  const first = t.first_human_response_s;
  setTile("first-response", fmt.seconds(first.median), `median · ${timeSub(first)}`);
  setTile("resolution", fmt.seconds(t.resolution_s.median), `median · ${timeSub(t.resolution_s)}`);
  setTile("resolved-by-bot", fmt.num(t.resolved_by_bot), "resolved without a handoff");
  const { up, down, up_share: upShare } = t.replies;
  setTile("helpful", fmt.pct(upShare), `${up} up · ${down} down, on bot replies written in the window`);
  setTile("satisfaction", ...satisfaction(t.ratings));
  const bots = Object.entries(report.per_bot);
  const perBot = bots.map(([bot, b]) => [
    bot,
    fmt.num(b.conversations),
    `${b.handed_off} (${fmt.pct(b.handoff_rate)})`,
    fmt.seconds(b.first_human_response_s.median),
    fmt.seconds(b.resolution_s.median),
    fmt.num(b.resolved_by_bot),
  ]);
  fillBody($("support-per-bot"), perBot, HEADINGS.length, "No conversations started in this window");
}
