/* DOM helpers shared by the console and the admin page.
 *
 * Text only ever reaches the page as text: `el` turns every child that is not a node into a
 * text node, and nothing here parses markup. Customers and agents can type HTML.
 */

export const $ = (id) => document.getElementById(id);

/* An element: `el("p", { class: "hint", dataset: { id: 3 }, onclick: f }, "text", otherNode)`.
 * Props: `class`, `dataset` (an object), `on<event>` (a listener), anything else an attribute
 * (`true` sets it empty; null, undefined and false leave it out). Children may be nested arrays;
 * null, undefined and false are skipped, and anything that is not a node becomes a text node. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";

// An SVG element with its attributes; `text` sets its text content.
export function svgEl(tag, attributes = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

// Shows `message` in the element (or the element with that id); an empty message hides it.
export function showError(target, message) {
  const node = typeof target === "string" ? $(target) : target;
  node.textContent = message || "";
  node.hidden = !message;
}

// Calls `fn` once things have been quiet for `ms`; `.cancel()` drops a pending call.
export function debounce(fn, ms) {
  let timer = null;
  const debounced = () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
  debounced.cancel = () => clearTimeout(timer);
  return debounced;
}
