/* The transcript's entries as nodes: the greeting, messages (with their timings and tokens)
 * and private notes. */

import { el } from "../shared/dom.js";
import { agentName, cachedShare, milliseconds, shortTime, timeNode } from "./format.js";
import { ROLE_LABELS } from "./state.js";

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
      el("span", { class: `tag msg-status status-${message.status}` }, message.status),
      timeNode(message.created_at, shortTime),
    ),
    el("p", { class: "msg-text" }, messageText(message)),
    message.role === "assistant" ? metricsNode(message) : null,
  );
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
