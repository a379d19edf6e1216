  // dom.js: small DOM helpers (no markup strings), icons, reply text with links, safe addresses.

  function el(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (name === "text") node.textContent = value;
      else if (name === "className") node.className = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) node.append(child);
    return node;
  }

  const SVG_NS = "http://www.w3.org/2000/svg";
  function icon(paths) {
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("fill", "none");
    svg.setAttribute("stroke", "currentColor");
    svg.setAttribute("stroke-width", "2");
    svg.setAttribute("stroke-linecap", "round");
    svg.setAttribute("stroke-linejoin", "round");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    for (const d of paths) {
      const path = document.createElementNS(SVG_NS, "path");
      path.setAttribute("d", d);
      svg.append(path);
    }
    return svg;
  }
  const ICONS = {
    chat: ["M21 12a8 8 0 0 1-11.6 7.1L4 20.5l1.4-4.9A8 8 0 1 1 21 12z"],
    chevronDown: ["M6 9l6 6 6-6"],
    close: ["M6 6l12 12", "M18 6L6 18"],
    send: ["M4 12l16-8-6 16-2.5-6.5z", "M11.5 13.5L20 4"],
    thumbUp: ["M7 10v11", "M7 10l4-8a3 3 0 0 1 3 3v4h5.5a2 2 0 0 1 2 2.3l-1.4 8a2 2 0 0 1-2 1.7H4a1 1 0 0 1-1-1v-9a1 1 0 0 1 1-1z"],
    thumbDown: ["M17 14V3", "M17 14l-4 8a3 3 0 0 1-3-3v-4H4.5a2 2 0 0 1-2-2.3l1.4-8a2 2 0 0 1 2-1.7H20a1 1 0 0 1 1 1v9a1 1 0 0 1-1 1z"],
  };

  // What a reply looks like on screen: no blank lines around it, at most one blank line inside.
  function tidy(text) {
    return (text || "").trim().replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n");
  }

  function showReplyText(node, text) {
    node.classList.remove("streaming");
    const visible = tidy(text);
    node.classList.toggle("empty", !visible);
    if (visible) setLinkedText(node, visible);
    else node.textContent = T.emptyReply;
  }

  // Part of a reply, as it streams in: plain text in the reply's own style.
  function showStreamingText(node, text) {
    node.classList.add("streaming");
    node.classList.remove("empty");
    node.textContent = tidy(text);
  }

  const URL_PATTERN = /\bhttps?:\/\/[^\s<>"']+/g;

  // Plain text, with http(s) addresses as links; never parsed as markup.
  function setLinkedText(node, text) {
    node.textContent = "";
    let last = 0;
    for (const match of text.matchAll(URL_PATTERN)) {
      let address = match[0];
      const trailing = address.match(/[.,;:!?)\]]+$/);
      if (trailing) address = address.slice(0, -trailing[0].length);
      node.append(document.createTextNode(text.slice(last, match.index)));
      node.append(el("a", { href: address, target: "_blank", rel: "noopener noreferrer nofollow", text: address }));
      last = match.index + address.length;
    }
    node.append(document.createTextNode(text.slice(last)));
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
