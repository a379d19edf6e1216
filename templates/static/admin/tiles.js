/* A tile: a heading, one figure and a line under it that says what it counts. */

import { $, el } from "../shared/dom.js";

export function tile(id, label) {
  const value = el("div", { class: "value", id }, "–");
  const sub = el("div", { class: "sub", id: `${id}-sub` }, "");
  return el("section", { class: "tile", "aria-label": label }, el("h3", {}, label), value, sub);
}

export function setTile(id, value, sub) {
  $(id).textContent = value;
  if (sub !== undefined) $(`${id}-sub`).textContent = sub;
}
