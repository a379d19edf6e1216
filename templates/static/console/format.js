/* How the console writes times, names, durations, statuses and ratings. */

import { el } from "../shared/dom.js";
import { signal } from "./signals.js";
import { LOW_RATING, MAX_RATING, STATUS_LABELS, state } from "./state.js";

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const dateAndClock = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const full = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "medium" });

// "just now", "5 minutes ago", "yesterday"…
export function timeAgo(iso) {
  const seconds = (new Date(iso).getTime() - Date.now()) / 1000;
  const steps = [
    [60, "second"],
    [60, "minute"],
    [24, "hour"],
    [7, "day"],
    [4.35, "week"],
    [12, "month"],
    [Infinity, "year"],
  ];
  let value = seconds;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) {
      return unit === "second" && Math.abs(value) < 45 ? "just now" : relative.format(Math.round(value), unit);
    }
    value /= size;
  }
  return "";
}

// A <time> showing `format(date, iso)`, with the full date and time as its tooltip.
export function timeNode(iso, format) {
  const date = new Date(iso);
  return el("time", { datetime: iso, title: full.format(date) }, format(date, iso));
}

// The clock time today, the date and time on other days.
export function shortTime(date) {
  const today = new Date().toDateString() === date.toDateString();
  return today ? clock.format(date) : dateAndClock.format(date);
}

export const shortId = (id) => String(id).slice(0, 8);

export function agentName(id) {
  if (id === null || id === undefined) return "nobody";
  if (state.me && id === state.me.id) return `${state.me.name} (you)`;
  const name = state.agentNames.get(id);
  if (name) return name;
  // A colleague added since the names were loaded: ask for them again, once per id.
  if (!state.unknownAgentIds.has(id)) {
    state.unknownAgentIds.add(id);
    signal("agent-unknown", id);
  }
  return `agent #${id}`;
}

export function milliseconds(value) {
  return `${Number(value).toFixed(1)} ms`;
}

export function cachedShare(cached, prompt) {
  const percent = prompt > 0 ? Math.round((100 * cached) / prompt) : 0;
  return `${cached}/${prompt} cached (${percent}%)`;
}

// Who the customer is: their name and e-mail as the shop said, and whether its server signed them.
export function customerNode(customer, { withUserId = false } = {}) {
  if (!customer) return el("span", { class: "customer anonymous" }, "Anonymous customer");
  const verified = customer.verified;
  return el(
    "span",
    { class: "customer", dataset: { verified: String(verified) } },
    el("span", { class: "customer-name" }, customer.name || customer.email || customer.user_id || "Anonymous customer"),
    customer.name && customer.email ? el("span", { class: "customer-email" }, customer.email) : null,
    withUserId && customer.user_id ? el("span", { class: "customer-id" }, `id ${customer.user_id}`) : null,
    el(
      "span",
      {
        class: `identity ${verified ? "verified" : "unverified"}`,
        title: verified
          ? "Signed by the shop's server"
          : "Not signed by the shop's server: anyone could have claimed it",
      },
      verified ? "Verified" : "Unverified",
    ),
  );
}

export function statusBadge(status) {
  return el("span", { class: `badge status-${status}`, dataset: { status } }, STATUS_LABELS[status] || status);
}

// The customer's rating of the conversation, "★ 2/5"; a poor one (LOW_RATING or less) stands out.
export function ratingNode(rating) {
  if (!rating) return null;
  const low = rating.score <= LOW_RATING;
  return el(
    "span",
    {
      class: `rating${low ? " rating-low" : ""}`,
      dataset: { score: String(rating.score) },
      title: `Rated ${full.format(new Date(rating.created_at))}`,
    },
    el("span", { class: "visually-hidden" }, "Customer rating: "),
    el("span", { "aria-hidden": "true" }, "★ "),
    `${rating.score}/${MAX_RATING}`,
  );
}
