/* Canned responses: the dialog that lists, creates and deletes them, and picking one in a
 * reply by typing "/" and its shortcode: the pick puts its text, variables filled, in the reply
 * box to edit before sending ({customer_name}, {agent_name}). */

import { $, el, showError } from "../shared/dom.js";
import { api } from "./client.js";
import { UNKNOWN_AGENT_NAME, UNKNOWN_CUSTOMER_NAME, announce, state } from "./state.js";

const suggestion = { items: [], active: -1 };

function typedShortcode() {
  const match = /^\/(\S*)$/.exec($("reply-input").value);
  return match ? match[1].toLowerCase() : null;
}

function matchingCanned(typed) {
  const starts = state.canned.filter((c) => c.shortcode.startsWith(typed));
  const contains = state.canned.filter((c) => !c.shortcode.startsWith(typed) && c.shortcode.includes(typed));
  return [...starts, ...contains];
}

function updateSuggestions() {
  const typed = typedShortcode();
  if (typed === null) return closeSuggestions();
  // Opening the list fetches the canned responses again: colleagues may have added some.
  if ($("canned-suggestions").hidden) loadCanned();
  const previous = suggestion.items[suggestion.active]?.shortcode;
  suggestion.items = matchingCanned(typed);
  const kept = suggestion.items.findIndex((canned) => canned.shortcode === previous);
  suggestion.active = kept >= 0 ? kept : suggestion.items.length ? 0 : -1;
  renderSuggestions();
}

function renderSuggestions() {
  const list = $("canned-suggestions");
  const input = $("reply-input");
  const options = suggestion.items.map((canned, index) =>
    el(
      "li",
      {
        id: `canned-option-${index}`,
        role: "option",
        class: "suggestion",
        "aria-selected": index === suggestion.active ? "true" : "false",
        dataset: { shortcode: canned.shortcode },
        onmousedown: (event) => event.preventDefault(),
        onclick: () => pickSuggestion(index),
      },
      el("span", { class: "shortcode" }, `/${canned.shortcode}`),
      el("span", { class: "canned-text" }, fillVariables(canned.text)),
    ),
  );
  if (!options.length) {
    options.push(
      el("li", { class: "suggestion none", role: "option", "aria-disabled": "true" }, "No canned response matches"),
    );
  }
  list.replaceChildren(...options);
  list.hidden = false;
  input.setAttribute("aria-expanded", "true");
  if (suggestion.active >= 0) {
    input.setAttribute("aria-activedescendant", `canned-option-${suggestion.active}`);
    $(`canned-option-${suggestion.active}`).scrollIntoView({ block: "nearest" });
  } else {
    input.removeAttribute("aria-activedescendant");
  }
}

export function closeSuggestions() {
  suggestion.items = [];
  suggestion.active = -1;
  $("canned-suggestions").hidden = true;
  $("canned-suggestions").replaceChildren();
  $("reply-input").setAttribute("aria-expanded", "false");
  $("reply-input").removeAttribute("aria-activedescendant");
}

// The open conversation's customer by name (the shop's identity, else a `name` in the context),
// and the signed-in agent: the server fills a sent "/shortcode" the same way.
function fillVariables(text) {
  const t = state.transcript;
  const contextName = t?.context?.name;
  const customerName = t?.customer?.name || (contextName ? String(contextName) : "") || UNKNOWN_CUSTOMER_NAME;
  return text
    .replaceAll("{customer_name}", customerName)
    .replaceAll("{agent_name}", state.me?.name || UNKNOWN_AGENT_NAME);
}

function pickSuggestion(index) {
  const canned = suggestion.items[index];
  if (!canned) return;
  const input = $("reply-input");
  input.value = fillVariables(canned.text);
  closeSuggestions();
  updatePreview();
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
  announce(`Inserted /${canned.shortcode}: edit it, then press Enter to send.`);
}

// Under the reply: what a typed "/shortcode" will send, or that there is no such response.
export function updatePreview() {
  const preview = $("reply-preview");
  const typed = typedShortcode();
  if (typed === null || typed === "") {
    preview.hidden = true;
    preview.replaceChildren();
    return;
  }
  const canned = state.canned.find((c) => c.shortcode === typed);
  if (!canned && matchingCanned(typed).length) {
    // Still typing a shortcode the list offers.
    preview.hidden = true;
    preview.replaceChildren();
    return;
  }
  preview.classList.toggle("unknown", !canned);
  preview.replaceChildren(
    ...(canned
      ? [el("span", { class: "preview-label" }, `Sends /${canned.shortcode}: `), fillVariables(canned.text)]
      : [`No canned response /${typed}.`]),
  );
  preview.hidden = false;
}

// The reply box's keys while suggestions show (arrows, Enter or Tab picks, Escape closes);
// true when the key was for the suggestions.
export function onSuggestionKeydown(event) {
  const open = !$("canned-suggestions").hidden;
  if (open && suggestion.items.length) {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      suggestion.active = (suggestion.active + step + suggestion.items.length) % suggestion.items.length;
      renderSuggestions();
      return true;
    }
    if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") {
      event.preventDefault();
      pickSuggestion(suggestion.active);
      return true;
    }
  }
  if (open && event.key === "Escape") {
    event.preventDefault();
    closeSuggestions();
    return true;
  }
  return false;
}

export async function loadCanned() {
  try {
    state.canned = await api("/api/v1/canned-responses");
  } catch (error) {
    showError("canned-error", error.detail || String(error));
    return;
  }
  renderCannedList();
  if (!$("canned-suggestions").hidden) updateSuggestions();
  updatePreview();
}

function renderCannedList() {
  const rows = state.canned.map((canned) =>
    el(
      "li",
      { dataset: { shortcode: canned.shortcode } },
      el("span", { class: "shortcode" }, `/${canned.shortcode}`),
      el("span", { class: "canned-text" }, canned.text),
      el(
        "button",
        {
          type: "button",
          class: "secondary small",
          "aria-label": `Delete /${canned.shortcode}`,
          onclick: () => deleteCanned(canned),
        },
        "Delete",
      ),
    ),
  );
  if (!rows.length) rows.push(el("li", { class: "empty" }, "No canned responses yet."));
  $("canned-list").replaceChildren(...rows);
}

async function createCanned(event) {
  event.preventDefault();
  const shortcode = $("canned-shortcode").value.trim().replace(/^\//, "");
  const text = $("canned-text").value;
  showError("canned-error", "");
  try {
    await api("/api/v1/canned-responses", { method: "POST", body: { shortcode, text } });
    $("canned-shortcode").value = "";
    $("canned-text").value = "";
    announce(`Canned response /${shortcode} created.`);
    await loadCanned();
    $("canned-shortcode").focus();
  } catch (error) {
    showError("canned-error", error.detail || String(error));
  }
}

async function deleteCanned(canned) {
  if (!window.confirm(`Delete the canned response /${canned.shortcode}?`)) return;
  showError("canned-error", "");
  try {
    await api(`/api/v1/canned-responses/${canned.id}`, { method: "DELETE" });
    announce(`Canned response /${canned.shortcode} deleted.`);
    await loadCanned();
  } catch (error) {
    showError("canned-error", error.detail || String(error));
  }
}

export function bindCanned() {
  const reply = $("reply-input");
  reply.addEventListener("input", () => {
    updateSuggestions();
    updatePreview();
  });
  reply.addEventListener("blur", () => setTimeout(closeSuggestions, 100));
  $("open-canned").addEventListener("click", () => {
    showError("canned-error", "");
    $("canned-dialog").showModal();
    loadCanned();
  });
  $("close-canned").addEventListener("click", () => $("canned-dialog").close());
  $("canned-form").addEventListener("submit", createCanned);
}
