/* The transcript's entries as nodes: the greeting, messages (with their timings and tokens,
 * the customer's thumbs up or down on a bot reply, why a reply may be wrong and the help-center
 * articles it cites), private notes, and the customer's rating of the conversation. */

import { el, svgEl } from "../shared/dom.js";
import { agentName, cachedShare, milliseconds, ratingNode, shortTime, timeNode } from "./format.js";
import { FEEDBACK_LABELS, LOW_RATING, ROLE_LABELS, UNUSUAL_STATUS_LABELS } from "./state.js";

// Outlined thumbs (24-unit box), the same drawing as the widget's buttons.
const THUMBS = {
  up: ["M7 10v11", "M7 10l4-8a3 3 0 0 1 3 3v4h5.5a2 2 0 0 1 2 2.3l-1.4 8a2 2 0 0 1-2 1.7H4a1 1 0 0 1-1-1v-9a1 1 0 0 1 1-1z"],
  down: ["M17 14V3", "M17 14l-4 8a3 3 0 0 1-3-3v-4H4.5a2 2 0 0 1-2-2.3l1.4-8a2 2 0 0 1 2-1.7H20a1 1 0 0 1 1 1v9a1 1 0 0 1-1 1z"],
};

export function greetingNode(text) {
  return el(
    "li",
    { class: "msg role-assistant greeting" },
    el("div", { class: "msg-head" }, el("span", { class: "who" }, "Bot"), el("span", { class: "tag" }, "greeting")),
    el("p", { class: "msg-text" }, text),
  );
}

export function messageNode(message) {
  const who = message.role === "agent" ? `Agent: ${agentName(message.author_agent_id)}` : ROLE_LABELS[message.role];
  return el(
    "li",
    {
      class: `msg role-${message.role}`,
      dataset: { messageId: message.id, role: message.role, status: message.status },
    },
    el(
      "div",
      { class: "msg-head" },
      el("span", { class: "who" }, who || message.role),
      statusTag(message),
      message.doubt ? el("span", { class: "tag msg-status status-doubtful" }, "doubtful") : null,
      feedbackNode(message),
      timeNode(message.created_at, shortTime),
    ),
    el("p", { class: "msg-text" }, messageText(message)),
    doubtNode(message),
    sourcesNode(message),
    message.role === "assistant" ? metricsNode(message) : null,
  );
}

// Only an unusual status is tagged (streaming, failed, stopped); a complete message has none.
function statusTag(message) {
  const label = UNUSUAL_STATUS_LABELS[message.status];
  return label ? el("span", { class: `tag msg-status status-${message.status}` }, label) : null;
}

// The customer's rating of a bot reply: a thumb and its words, read as "Customer feedback: Helpful".
function feedbackNode(message) {
  const paths = THUMBS[message.feedback];
  if (!paths) return null;
  const thumb = svgEl("svg", { class: "thumb", viewBox: "0 0 24 24", "aria-hidden": "true", focusable: "false" });
  for (const d of paths) thumb.append(svgEl("path", { d }));
  const rated = message.feedback_at ? `Rated ${shortTime(new Date(message.feedback_at))}` : null;
  return el(
    "span",
    { class: `feedback feedback-${message.feedback}`, dataset: { feedback: message.feedback }, title: rated },
    thumb,
    el("span", { class: "visually-hidden" }, "Customer feedback: "),
    FEEDBACK_LABELS[message.feedback],
  );
}

// A reply the checks flagged: said before the metrics, with why, so an agent can correct it.
// One they did not show the customer: what the model wrote, beside the quote that was shown.
function doubtNode(message) {
  if (!message.doubt) return null;
  const doubt = el(
    "p",
    { class: "doubt", role: "note", dataset: { doubt: "" } },
    el("span", { class: "doubt-label" }, message.withheld_text ? "Not shown, may be wrong: " : "May be wrong: "),
    message.doubt,
  );
  if (!message.withheld_text) return doubt;
  return el(
    "div",
    { class: "withheld", dataset: { withheld: "" } },
    doubt,
    el("p", { class: "withheld-text" }, el("span", { class: "doubt-label" }, "The model wrote: "), message.withheld_text),
  );
}

// The help-center articles a bot reply cites, as the customer saw them under it: each title a
// link when its address is http(s), plain text otherwise.
export function sourcesNode(message) {
  const items = (Array.isArray(message.sources) ? message.sources : [])
    .filter((source) => source && typeof source === "object")
    .map((source) => {
      const name = typeof source.title === "string" && source.title.trim() ? source.title.trim() : source.id;
      if (typeof name !== "string" || !name.trim()) return null;
      const href = httpUrl(source.url);
      const shown = href
        ? el("a", { href, target: "_blank", rel: "noopener noreferrer" }, name)
        : el("span", {}, name);
      return el("li", { dataset: { sourceId: String(source.id ?? "") } }, shown);
    })
    .filter(Boolean);
  if (!items.length) return null;
  const labelId = `transcript-sources-${message.id}`;
  return el(
    "div",
    { class: "sources" },
    el("span", { class: "sources-label", id: labelId }, "Sources"),
    el("ul", { "aria-labelledby": labelId }, items),
  );
}

// `value` as an absolute http(s) address to link to, or null (no javascript:, data:, relative…).
function httpUrl(value) {
  if (typeof value !== "string" || !value.trim()) return null;
  let parsed;
  try {
    parsed = new URL(value.trim());
  } catch {
    return null;
  }
  return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
}

function messageText(message) {
  if (message.text.trim()) return message.text;
  return message.status === "generating" ? "The bot is writing…" : "(empty)";
}

function metricsNode(message) {
  const metric = (name, label, value) =>
    el("div", {}, el("dt", {}, label), el("dd", { dataset: { metric: name } }, value));
  const items = [];
  if (message.prompt_tokens !== null) {
    items.push(metric("prompt-tokens", "Prompt", `${message.prompt_tokens} tokens`));
    if (message.cached_tokens !== null) {
      items.push(metric("cached", "Cache", cachedShare(message.cached_tokens, message.prompt_tokens)));
    }
  }
  if (message.completion_tokens !== null) {
    items.push(metric("completion-tokens", "Reply", `${message.completion_tokens} tokens`));
  }
  if (message.ttft_ms !== null) items.push(metric("ttft", "TTFT", milliseconds(message.ttft_ms)));
  if (message.total_ms !== null) items.push(metric("total", "Total", milliseconds(message.total_ms)));
  if (message.finish_reason && message.finish_reason !== "stop") {
    items.push(metric("finish", "Finish", message.finish_reason));
  }
  if (!items.length) return null;
  return el("dl", { class: "metrics", "aria-label": "Timings and tokens" }, items);
}

export function noteNode(note) {
  return el(
    "li",
    { class: "note", dataset: { noteId: note.id }, "aria-label": "Private note" },
    el(
      "div",
      { class: "msg-head" },
      el("span", { class: "private-label" }, "Private note"),
      el("span", { class: "who" }, agentName(note.agent_id)),
      timeNode(note.created_at, shortTime),
    ),
    el("p", { class: "msg-text" }, note.text),
  );
}

// The customer's rating of the resolved conversation, with their comment, where it was given.
export function ratingEntryNode(rating) {
  return el(
    "li",
    {
      class: `rating-entry${rating.score <= LOW_RATING ? " low" : ""}`,
      dataset: { score: String(rating.score) },
      "aria-label": "Customer rating",
    },
    el(
      "div",
      { class: "msg-head" },
      el("span", { class: "who" }, "The customer rated the conversation"),
      ratingNode(rating),
      timeNode(rating.created_at, shortTime),
    ),
    rating.comment ? el("p", { class: "msg-text" }, rating.comment) : el("p", { class: "msg-text muted" }, "No comment."),
  );
}
