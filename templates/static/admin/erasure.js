/* The admin page's erasure form, in two steps so that nothing is erased by accident: first a
 * preview (a dry run of /api/v1/admin/erasures) that says how many conversations, messages and
 * identity records would go; then the conversation id or the customer's value typed again to
 * confirm. The API checks the confirmation; a mismatch shows its reason and erases nothing. */

import { request } from "../shared/api.js";
import { el } from "../shared/dom.js";

const count = (n, one, many = `${one}s`) => `${n.toLocaleString("en")} ${n === 1 ? one : many}`;

// "2 conversations: the texts of 8 messages, 3 identity records, 1 note and 1 rating comment".
export function describeCounts(counts) {
  const parts = [
    `the texts of ${count(counts.messages, "message")}`,
    count(counts.identity_records, "identity record"),
    count(counts.notes, "private note"),
    count(counts.rating_comments, "rating comment"),
  ];
  const listed = `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`;
  return `${count(counts.conversations, "conversation")}: ${listed}`;
}

function confirmStep() {
  const input = el("input", { id: "erase-confirm", autocomplete: "off", spellcheck: "false", size: 38 });
  const erase = el("button", { type: "submit", class: "danger" }, "Erase for good");
  const cancel = el("button", { type: "button" }, "Cancel");
  const form = el(
    "form",
    { id: "erase-confirmation", class: "confirm", "aria-labelledby": "erase-confirm-title", hidden: true },
    el("h4", { id: "erase-confirm-title" }, "Confirm the erasure"),
    el("p", { id: "erase-summary" }, ""),
    el("label", { for: "erase-confirm", id: "erase-confirm-label" }, ""),
    " ",
    input,
    " ",
    erase,
    " ",
    cancel,
    el("p", { id: "erase-error", class: "error", role: "alert" }, ""),
  );
  return { form, input, cancel };
}

// The erasure form: one conversation by id, or a customer by a field of their details; `done()`
// runs after each erasure (the audit log shows it).
export function eraseForm(token, done) {
  const conversation = el("input", { id: "erase-conversation", autocomplete: "off", size: 38 });
  const field = el("input", { id: "erase-field", autocomplete: "off", value: "email", size: 10 });
  const value = el("input", { id: "erase-value", autocomplete: "off", size: 28 });
  const status = el("p", { id: "erase-status", role: "status" }, "");
  const step = confirmStep();
  let planned = null; // the request previewed, and what must be typed to confirm it

  const hideStep = () => {
    planned = null;
    step.form.hidden = true;
  };
  const form = el(
    "form",
    { "aria-labelledby": "erase-title" },
    el("h3", { id: "erase-title" }, "Erase a customer's conversations"),
    el(
      "p",
      { class: "hint" },
      "Message texts, the customer's details (the context given at the start, the shop's identity, an " +
        "e-mail left for the team), notes and rating comments go for good; counts and timings stay. " +
        "Preview first: the erasure asks you to type the conversation id or the value again.",
    ),
    el("label", { for: "erase-conversation" }, "Conversation id "),
    conversation,
    el("label", { for: "erase-field" }, " or customer field "),
    field,
    el("label", { for: "erase-value" }, " equal to "),
    value,
    " ",
    el("button", { type: "submit" }, "Preview erasure"),
    status,
  );
  for (const input of [conversation, field, value]) input.addEventListener("input", hideStep);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    hideStep();
    const body = {};
    if (conversation.value.trim()) body.conversation_id = conversation.value.trim();
    if (value.value.trim()) Object.assign(body, { customer_field: field.value.trim(), value: value.value.trim() });
    status.textContent = "Counting…";
    try {
      const preview = await request("/api/v1/admin/erasures", { method: "POST", body: { ...body, dry_run: true }, token: token() });
      if (preview.counts.conversations === 0) {
        status.textContent = "No conversation matches: nothing to erase.";
        return;
      }
      const target = body.conversation_id ?? body.value;
      planned = { body, target };
      status.textContent = "";
      step.form.querySelector("#erase-summary").textContent =
        `This erases ${describeCounts(preview.counts)}. It cannot be undone.`;
      step.form.querySelector("#erase-confirm-label").textContent =
        `Type ${body.conversation_id ? "the conversation id" : "the value"} ${target} to confirm`;
      step.form.querySelector("#erase-error").textContent = "";
      step.input.value = "";
      step.form.hidden = false;
      step.input.focus();
    } catch (failure) {
      status.textContent = `Not previewed: ${failure.message}`;
    }
  });

  step.cancel.addEventListener("click", () => {
    hideStep();
    status.textContent = "Nothing was erased.";
  });
  step.form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!planned) return;
    const error = step.form.querySelector("#erase-error");
    try {
      const body = { ...planned.body, confirm: step.input.value };
      const result = await request("/api/v1/admin/erasures", { method: "POST", body, token: token() });
      hideStep();
      form.reset();
      status.textContent = `Erased ${describeCounts(result.counts)}.`;
      done();
    } catch (failure) {
      error.textContent = failure.message;
      step.input.select();
    }
  });
  return el("div", { class: "erasure" }, form, step.form);
}
