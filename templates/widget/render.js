  // render.js: showing messages, the articles a reply cites, notices, errors, typing dots and the badge.

  function isNearBottom() {
    return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  }

  function append(node, { scroll = false } = {}) {
    const follow = scroll || isNearBottom();
    log.append(node);
    if (follow) log.scrollTop = log.scrollHeight;
    return node;
  }

  const NEAR_THE_LIMIT = 0.9; // the counter warns from this share of the message size limit on

  const ROLE_CLASSES = { user: "user", assistant: "bot", agent: "agent" };

  // A message bubble; returns it with `.body`, the node its text goes in. `author`: an agent's
  // name; `streaming`: a reply whose text is still coming (shown as text, with a caret).
  function addMessage(role, text, { id = null, scroll = false, author = null, streaming = false } = {}) {
    const bubble = el("div", { className: `msg ${ROLE_CLASSES[role]}`, "data-role": role });
    if (role === "agent") {
      bubble.append(el("span", { className: "sender", text: author ? `${author} · ${T.team}` : T.team }));
    } else {
      bubble.append(el("span", { className: "sr-only", text: `${role === "user" ? T.you : T.assistant}: ` }));
    }
    const body = el("span", { className: "text" });
    if (role === "user") body.textContent = text;
    else if (streaming) showStreamingText(body, text);
    else showReplyText(body, text);
    bubble.append(body);
    bubble.body = body;
    if (id != null) {
      bubble.dataset.messageId = String(id);
      state.shownMessageIds.add(id);
    }
    return append(bubble, { scroll });
  }

  let sourceLists = 0; // numbers each list's label, which names the list for screen readers

  // The help-center articles the reply in `bubble` cites (`sources`: [{ id, title, url }]), under
  // its text: each title a link when its address is http(s), plain text otherwise. Replaces any
  // list the bubble had; none when there are none.
  function addSources(bubble, sources) {
    const previous = bubble.querySelector(":scope > .sources");
    if (previous) previous.remove();
    const items = (Array.isArray(sources) ? sources : [])
      .filter((source) => source && typeof source === "object")
      .map((source) => {
        const name = typeof source.title === "string" && source.title.trim() ? source.title.trim() : source.id;
        if (typeof name !== "string" || !name.trim()) return null;
        const href = httpUrl(source.url);
        const shown = href
          ? el("a", { href, target: "_blank", rel: "noopener noreferrer", text: name })
          : el("span", { text: name });
        // The words the reply stands on, folded until the customer opens them (a native
        // disclosure: Enter or Space on its summary opens it).
        const passage = typeof source.passage === "string" && source.passage.trim()
          ? el("details", { className: "passage" }, [
              el("summary", { text: T.showPassage }),
              el("blockquote", { text: source.passage.trim() }),
            ])
          : null;
        return el("li", {}, passage ? [shown, passage] : [shown]);
      })
      .filter(Boolean);
    if (!items.length) return null;
    const labelId = `sources-${uid}-${++sourceLists}`;
    const list = el("div", { className: "sources" }, [
      el("span", { className: "sources-label", id: labelId, text: T.sources }),
      el("ul", { "aria-labelledby": labelId }, items),
    ]);
    const follow = isNearBottom();
    bubble.insertBefore(list, bubble.querySelector(":scope > .feedback"));
    if (follow) log.scrollTop = log.scrollHeight;
    return list;
  }

  function addNotice(text) {
    return append(el("p", { className: "notice", text }), { scroll: true });
  }

  // One error at a time: a new one replaces the one showing, wherever it was.
  function addError(text, action) {
    clearErrors();
    const box = el("div", { className: "error", role: "alert" }, [el("span", { text })]);
    if (action) box.append(actionButton(action));
    return append(box, { scroll: true });
  }

  function clearErrors() {
    for (const box of log.querySelectorAll(".error")) box.remove();
    clearComposerError();
  }

  function actionButton({ label, run }) {
    const button = el("button", { type: "button", text: label });
    button.addEventListener("click", run);
    return button;
  }

  function showTyping() {
    return append(
      el("div", { className: "msg bot typing", role: "status", "data-typing": "" }, [
        el("span", { className: "sr-only", text: T.typing }),
        el("i", { "aria-hidden": "true" }),
        el("i", { "aria-hidden": "true" }),
        el("i", { "aria-hidden": "true" }),
      ]),
      { scroll: true },
    );
  }

  function showComposerError(text, action) {
    clearErrors();
    composerError.textContent = text;
    if (action) composerError.append(actionButton(action));
    composerError.hidden = false;
  }

  function clearComposerError() {
    composerError.hidden = true;
    composerError.textContent = "";
  }

  function setBusy(busy) {
    state.busy = busy;
    sendButton.setAttribute("aria-disabled", String(busy));
    // While a reply streams, screen readers wait for it whole instead of reading each token.
    log.setAttribute("aria-busy", String(busy));
  }

  function setUnread(count) {
    state.unread = count;
    badge.textContent = String(count);
    badge.hidden = count === 0;
    launcher.setAttribute("aria-label", count ? `${T.openChat} (${T.newMessages(count)})` : T.openChat);
  }

  // "connecting" (nothing heard yet), "online", "offline" (the server did not answer),
  // "unavailable" (it answered, but the chat could not start) or "not-allowed" (the server
  // refuses this page's origin).
  function setConnection(connection) {
    state.connection = connection;
    host.dataset.connection = connection;
    updateSubtitle();
  }

  // Under the box: "count / limit"; near the limit, how many are left; over it, how many too many.
  function updateCounter() {
    if (state.limit == null) return;
    const count = [...input.value.trim()].length; // code points, as the server counts
    const left = state.limit - count;
    const level = left < 0 ? "over" : count >= state.limit * NEAR_THE_LIMIT ? "near" : "ok";
    let text = T.counter(count, state.limit);
    if (level === "near") text += ` · ${T.charactersLeft(left)}`;
    if (level === "over") text += ` · ${T.charactersOver(-left)}`;
    counter.textContent = text;
    counter.dataset.level = level;
    counter.hidden = false;
  }
