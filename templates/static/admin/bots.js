/* The bots this app process serves, from /api/v1/admin/bots, as they are now (not over the
 * window): whether each one's fixed prefix is warm in vLLM's prefix cache (computed once, at
 * start-up or on a reload), how many tokens it has, and its help center, compiled into the prefix
 * when it fits the model's context window, else brought beside each question, its matching
 * articles only. */

import { $, el } from "../shared/dom.js";
import { fillBody, fmt, row } from "./format.js";

const HEADINGS = ["Bot", "Name", "Prefix cache", "Fixed prefix", "Help center"];
const STATES = { warm: "warm", warming: "warming…", cold: "cold" };

export function botsSection() {
  return el(
    "section",
    { class: "group", "aria-labelledby": "bots-served-title" },
    el("h2", { id: "bots-served-title" }, "Bots: fixed prefixes and help centers"),
    el(
      "p",
      { class: "hint" },
      "As this app process serves them now. Warm: the bot's fixed prefix is in vLLM's prefix cache, so " +
        "replies do not compute it again. A help center goes into the prefix when it fits the model's " +
        "context window; otherwise the articles that match each question are brought beside it.",
    ),
    el("table", { id: "bots-served" }, el("thead", {}, row("th", HEADINGS)), el("tbody", {})),
  );
}

const plural = (n, word) => `${fmt.count(n)} ${word}${n === 1 ? "" : "s"}`;

function helpCenter(help) {
  if (!help) return "–";
  const where = help.in_prefix ? "in the prefix" : "beside questions";
  return `${plural(help.articles, "article")}, ${plural(help.tokens, "token")}, ${where}`;
}

// Fills the table; true while a bot is still warming (the page then asks again at its next poll).
export function showBots(bots) {
  const served = bots.filter((bot) => bot.warmth !== null);
  const cells = served.map((bot) => [
    bot.slug,
    bot.name,
    el("span", { class: `state state-${bot.warmth}` }, STATES[bot.warmth]),
    plural(bot.prefix_tokens, "token"),
    helpCenter(bot.help_center),
  ]);
  fillBody($("bots-served"), cells, HEADINGS.length, "This process serves no bots");
  return served.some((bot) => bot.warmth === "warming");
}
