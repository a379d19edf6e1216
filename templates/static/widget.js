/*
 * prefixdesk chat widget.
 *
 * Embed with one tag:
 *   <script src="https://desk.example.com/static/widget.js" data-bot="shop-en"
 *           data-server="https://desk.example.com" defer></script>
 *
 * data-bot     the bot's slug (required)
 * data-server  the prefixdesk server's address; empty or absent means this page's origin
 * data-name    the name shown in the panel's header (optional)
 * data-lang    "en" or "zh" for the widget's own labels (optional; defaults to the page's lang)
 * data-color   the accent colour (optional)
 *
 * Everything renders inside a shadow root, so the page's CSS cannot reach it. Text from the
 * server or the customer only ever goes into the DOM through textContent / text nodes.
 */
(() => {
  "use strict";

  const script = document.currentScript;
  if (!script || !script.dataset.bot) {
    console.warn("prefixdesk widget: add data-bot=\"<slug>\" to the <script> tag");
    return;
  }

  const STRINGS = {
    en: {
      openChat: "Open chat",
      closeChat: "Close chat",
      newMessages: (n) => (n === 1 ? "1 new message" : `${n} new messages`),
      chat: "Chat",
      assistantSubtitle: "Virtual assistant · replies instantly",
      teamSubtitle: "You're chatting with our team",
      resolvedSubtitle: "Conversation resolved · write to continue",
      messages: "Messages",
      inputLabel: "Type your message",
      placeholder: "Write a message…",
      send: "Send",
      you: "You",
      assistant: "Assistant",
      team: "Support team",
      typing: "The assistant is typing…",
      connecting: "We're connecting you with our team. Someone will reply here shortly.",
      withTeam: "You're now chatting with our team.",
      botBack: "You're chatting with our assistant again.",
      resolved: "This conversation was marked as resolved. Write again any time.",
      waiting: "Your message is with our team; they will reply here.",
      replyFailed: "This reply could not be written.",
      streamCut: "The connection dropped before the reply finished. Your message is saved; reload to see the reply.",
      offline: "We couldn't reach the chat server. Check your connection and try again.",
      startFailed: "The chat could not be started.",
      retry: "Try again",
      newConversation: "Start a new conversation",
      gone: "This conversation is no longer available.",
      emptyReply: "(an empty reply)",
      withTeamEarlier: "Our team is handling this conversation.",
    },
    zh: {
      openChat: "打开聊天",
      closeChat: "关闭聊天",
      newMessages: (n) => `${n} 条新消息`,
      chat: "在线客服",
      assistantSubtitle: "智能助手 · 即时回复",
      teamSubtitle: "人工客服为您服务",
      resolvedSubtitle: "会话已解决 · 发送消息即可继续",
      messages: "消息",
      inputLabel: "输入您的消息",
      placeholder: "请输入消息…",
      send: "发送",
      you: "您",
      assistant: "智能助手",
      team: "人工客服",
      typing: "助手正在输入…",
      connecting: "正在为您转接人工客服，请稍候。",
      withTeam: "人工客服已接入，正在为您服务。",
      botBack: "智能助手已回来为您服务。",
      resolved: "本次会话已标记为解决。如有需要，随时留言。",
      waiting: "您的消息已转交人工客服，他们会在这里回复您。",
      replyFailed: "这条回复未能生成。",
      streamCut: "回复完成前连接中断。您的消息已保存，刷新页面即可查看回复。",
      offline: "无法连接聊天服务器，请检查网络后重试。",
      startFailed: "无法开始聊天。",
      retry: "重试",
      newConversation: "开始新的会话",
      gone: "该会话已不可用。",
      emptyReply: "（空白回复）",
      withTeamEarlier: "人工客服正在处理本次会话。",
    },
  };

  const bot = script.dataset.bot;
  const server = (script.dataset.server || "").replace(/\/+$/, "");
  const serverOrigin = new URL(server || location.origin, location.href).origin;
  const api = `${server}/api/v1/widget/conversations`;
  const lang = (script.dataset.lang || document.documentElement.lang || "en").toLowerCase();
  const T = lang.startsWith("zh") ? STRINGS.zh : STRINGS.en;
  const title = script.dataset.name || T.chat;
  const accent = /^#[0-9a-f]{3,8}$/i.test(script.dataset.color || "") ? script.dataset.color : "#1d5c3a";
  const storageKey = `prefixdesk:${serverOrigin}:${bot}`;

  const CSS = `
    :host { all: initial; }
    *, *::before, *::after { box-sizing: border-box; }
    .root {
      --accent: ${accent};
      font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "PingFang SC",
        "Microsoft YaHei", sans-serif;
      color: #1f2328;
    }
    button { font: inherit; cursor: pointer; }
    .sr-only {
      position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
      clip: rect(0 0 0 0); white-space: nowrap; border: 0;
    }
    .launcher {
      position: fixed; right: 20px; bottom: 20px; z-index: 2147483000;
      width: 60px; height: 60px; border-radius: 50%; border: 0;
      display: grid; place-items: center;
      background: var(--accent); color: #fff;
      box-shadow: 0 6px 20px rgb(0 0 0 / 0.25);
      transition: transform 0.15s ease;
    }
    .launcher:hover { transform: scale(1.06); }
    .launcher:focus-visible { outline: 3px solid #fff; box-shadow: 0 0 0 6px var(--accent), 0 6px 20px rgb(0 0 0 / 0.25); }
    .launcher svg { width: 28px; height: 28px; }
    .launcher svg + svg, .root.is-open .launcher svg:first-child { display: none; }
    .root.is-open .launcher svg + svg { display: block; }
    .badge {
      position: absolute; top: -2px; right: -2px; min-width: 22px; height: 22px; padding: 0 6px;
      border-radius: 11px; background: #d93025; color: #fff; font-size: 12px; font-weight: 700;
      line-height: 22px; text-align: center; border: 2px solid #fff;
    }
    .badge[hidden] { display: none; }
    .panel {
      position: fixed; right: 20px; bottom: 92px; z-index: 2147483000;
      width: 380px; height: min(620px, calc(100vh - 112px));
      display: flex; flex-direction: column; overflow: hidden;
      background: #fff; border-radius: 16px;
      box-shadow: 0 12px 40px rgb(0 0 0 / 0.22), 0 0 0 1px rgb(0 0 0 / 0.06);
    }
    .panel[hidden] { display: none; }
    .header {
      display: flex; align-items: center; gap: 12px; padding: 14px 12px 14px 16px;
      background: var(--accent); color: #fff;
    }
    .avatar {
      flex: none; width: 36px; height: 36px; border-radius: 50%;
      display: grid; place-items: center; background: rgb(255 255 255 / 0.18);
    }
    .avatar svg { width: 20px; height: 20px; }
    .titles { flex: 1; min-width: 0; }
    .title { margin: 0; font-size: 16px; font-weight: 650; line-height: 1.25; }
    .subtitle { margin: 0; font-size: 12.5px; opacity: 0.88; }
    .subtitle::before {
      content: ""; display: inline-block; width: 8px; height: 8px; margin-right: 6px;
      border-radius: 50%; background: #7be495; vertical-align: 0;
    }
    .subtitle[data-status="open"]::before { background: #ffd166; }
    .subtitle[data-status="resolved"]::before { background: #c9d1c6; }
    .icon-button {
      flex: none; width: 36px; height: 36px; border-radius: 50%; border: 0;
      display: grid; place-items: center; background: transparent; color: inherit;
    }
    .icon-button:hover { background: rgb(255 255 255 / 0.16); }
    .icon-button:focus-visible { outline: 2px solid #fff; outline-offset: 1px; }
    .icon-button svg { width: 20px; height: 20px; }
    .log {
      flex: 1; overflow-y: auto; overscroll-behavior: contain;
      display: flex; flex-direction: column; gap: 8px; padding: 16px;
      background: #f5f6f3;
    }
    .log:focus-visible { outline: 2px solid var(--accent); outline-offset: -2px; }
    .msg {
      max-width: 85%; padding: 9px 13px; border-radius: 16px;
      white-space: pre-wrap; overflow-wrap: anywhere;
    }
    .msg.user { align-self: flex-end; background: var(--accent); color: #fff; border-bottom-right-radius: 4px; }
    .msg.bot { align-self: flex-start; background: #fff; border: 1px solid #e2e5df; border-bottom-left-radius: 4px; }
    .msg.agent { align-self: flex-start; background: #fff6e3; border: 1px solid #f0d9a5; border-bottom-left-radius: 4px; }
    .msg a { color: inherit; text-decoration: underline; }
    .msg .empty { color: #6b716a; font-style: italic; }
    .sender { display: block; margin-bottom: 2px; font-size: 12px; font-weight: 650; color: #7a5200; }
    .notice {
      align-self: center; max-width: 92%; margin: 4px 0; padding: 5px 12px;
      border-radius: 999px; background: #e6ebe3; color: #3b4a3f; font-size: 13px; text-align: center;
    }
    .error {
      align-self: stretch; padding: 8px 12px; border-radius: 10px;
      background: #fdecea; border: 1px solid #f2c4bf; color: #8a1c12; font-size: 14px;
    }
    .error button, .composer-error button {
      display: inline-block; margin-left: 6px; padding: 2px 10px; border-radius: 999px;
      border: 1px solid currentColor; background: #fff; color: inherit; font-size: 13px;
    }
    .failed { align-self: flex-start; color: #6b716a; font-size: 13px; font-style: italic; }
    .typing { display: inline-flex; gap: 4px; align-items: center; padding: 13px 14px; }
    .typing i {
      width: 7px; height: 7px; border-radius: 50%; background: #8b938a;
      animation: prefixdesk-bounce 1.2s infinite ease-in-out;
    }
    .typing i:nth-child(2) { animation-delay: 0.15s; }
    .typing i:nth-child(3) { animation-delay: 0.3s; }
    @keyframes prefixdesk-bounce {
      0%, 60%, 100% { transform: translateY(0); opacity: 0.5; }
      30% { transform: translateY(-4px); opacity: 1; }
    }
    .composer-error {
      margin: 0; padding: 8px 16px; background: #fdecea; color: #8a1c12; font-size: 13.5px;
      border-top: 1px solid #f2c4bf;
    }
    .composer-error[hidden] { display: none; }
    .composer {
      display: flex; align-items: flex-end; gap: 8px; padding: 12px;
      border-top: 1px solid #e2e5df; background: #fff;
    }
    textarea {
      flex: 1; min-height: 44px; max-height: 140px; resize: none; margin: 0;
      padding: 10px 14px; border: 1px solid #c8cec5; border-radius: 22px;
      font: inherit; color: inherit; background: #fff;
    }
    textarea:focus-visible { outline: none; border-color: var(--accent); box-shadow: 0 0 0 2px var(--accent); }
    .send {
      flex: none; width: 44px; height: 44px; border-radius: 50%; border: 0;
      display: grid; place-items: center; background: var(--accent); color: #fff;
    }
    .send:focus-visible { outline: 3px solid #fff; box-shadow: 0 0 0 5px var(--accent); }
    .send[aria-disabled="true"] { opacity: 0.45; cursor: not-allowed; }
    .send svg { width: 20px; height: 20px; }
    @media (max-width: 480px) {
      .panel { inset: 0; width: 100%; height: 100%; border-radius: 0; }
      .root.is-open .launcher { display: none; }
      textarea { font-size: 16px; } /* below 16px, iOS zooms into the field */
    }
    @media (prefers-reduced-motion: reduce) {
      .launcher { transition: none; }
      .typing i { animation: none; opacity: 0.8; }
    }
  `;

  // -- small DOM helpers (no markup strings) -------------------------------------------

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
  };

  // What a reply looks like on screen: no blank lines around it, at most one blank line inside.
  function tidy(text) {
    return (text || "").trim().replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n");
  }

  function showReplyText(node, text) {
    const visible = tidy(text);
    node.classList.toggle("empty", !visible);
    if (visible) setLinkedText(node, visible);
    else node.textContent = T.emptyReply;
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

  // -- the widget's DOM ----------------------------------------------------------------

  const host = el("div", { id: `prefixdesk-widget-${bot}`, "data-prefixdesk-bot": bot });
  const shadow = host.attachShadow({ mode: "open" });
  const uid = Math.random().toString(36).slice(2, 8);

  const badge = el("span", { className: "badge", "aria-hidden": "true", hidden: "" });
  const launcher = el(
    "button",
    { type: "button", className: "launcher", "aria-label": T.openChat, "aria-expanded": "false", "aria-controls": `panel-${uid}` },
    [icon(ICONS.chat), icon(ICONS.chevronDown), badge],
  );

  const subtitle = el("p", { className: "subtitle", id: `subtitle-${uid}`, text: T.assistantSubtitle, "data-status": "bot" });
  const closeButton = el("button", { type: "button", className: "icon-button", "aria-label": T.closeChat }, [icon(ICONS.close)]);
  const header = el("div", { className: "header" }, [
    el("div", { className: "avatar", "aria-hidden": "true" }, [icon(ICONS.chat)]),
    el("div", { className: "titles" }, [el("h2", { className: "title", id: `title-${uid}`, text: title }), subtitle]),
    closeButton,
  ]);
  const log = el("div", {
    className: "log",
    role: "log",
    "aria-live": "polite",
    "aria-label": T.messages,
    tabindex: "0",
  });
  const composerError = el("p", { className: "composer-error", role: "alert", hidden: "" });
  const input = el("textarea", {
    id: `input-${uid}`,
    rows: "1",
    placeholder: T.placeholder,
    autocomplete: "off",
    enterkeyhint: "send",
  });
  const sendButton = el("button", { type: "submit", className: "send", "aria-label": T.send }, [icon(ICONS.send)]);
  const composer = el("form", { className: "composer" }, [
    el("label", { className: "sr-only", for: `input-${uid}`, text: T.inputLabel }),
    input,
    sendButton,
  ]);
  const panel = el(
    "div",
    {
      className: "panel",
      id: `panel-${uid}`,
      role: "dialog",
      "aria-label": title,
      "aria-describedby": `subtitle-${uid}`,
      hidden: "",
    },
    [header, log, composerError, composer],
  );
  const root = el("div", { className: "root" }, [panel, launcher]);
  shadow.append(el("style", { text: CSS }), root);

  // -- state -----------------------------------------------------------------------------

  const state = {
    conversation: null, // {conversation_id, customer_token}
    starting: null, // the promise of the conversation being started or restored
    status: "bot",
    assigneeId: null,
    busy: false,
    unread: 0,
    toldWaiting: false, // the "your message is with our team" notice is showing for this wait
    shownMessageIds: new Set(),
    listener: null, // AbortController of the live events stream
  };

  const storage = {
    load() {
      try {
        const saved = JSON.parse(localStorage.getItem(storageKey) || "null");
        return saved && saved.conversation_id && saved.customer_token ? saved : null;
      } catch {
        return null; // storage blocked or corrupt: start afresh
      }
    },
    save(conversation) {
      try {
        localStorage.setItem(storageKey, JSON.stringify(conversation));
      } catch {
        /* private mode: the conversation just won't survive a reload */
      }
    },
    clear() {
      try {
        localStorage.removeItem(storageKey);
      } catch {
        /* nothing to clear */
      }
    },
  };

  // -- rendering -----------------------------------------------------------------------

  function isNearBottom() {
    return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  }

  function append(node, { scroll = false } = {}) {
    const follow = scroll || isNearBottom();
    log.append(node);
    if (follow) log.scrollTop = log.scrollHeight;
    return node;
  }

  const ROLE_CLASSES = { user: "user", assistant: "bot", agent: "agent" };

  // A message bubble; returns it with `.body`, the node its text goes in.
  function addMessage(role, text, { id = null, scroll = false } = {}) {
    const bubble = el("div", { className: `msg ${ROLE_CLASSES[role]}`, "data-role": role });
    if (role === "agent") {
      bubble.append(el("span", { className: "sender", text: T.team }));
    } else {
      bubble.append(el("span", { className: "sr-only", text: `${role === "user" ? T.you : T.assistant}: ` }));
    }
    const body = el("span", { className: "text" });
    if (role === "user") body.textContent = text;
    else showReplyText(body, text);
    bubble.append(body);
    bubble.body = body;
    if (id != null) {
      bubble.dataset.messageId = String(id);
      state.shownMessageIds.add(id);
    }
    return append(bubble, { scroll });
  }

  function addNotice(text) {
    return append(el("p", { className: "notice", text }), { scroll: true });
  }

  function addError(text, action) {
    const box = el("div", { className: "error", role: "alert" }, [el("span", { text })]);
    if (action) box.append(actionButton(action));
    return append(box, { scroll: true });
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

  function updateSubtitle() {
    const subtitles = { open: T.teamSubtitle, resolved: T.resolvedSubtitle };
    subtitle.dataset.status = state.status;
    subtitle.textContent = subtitles[state.status] || T.assistantSubtitle;
  }

  // A status from the server; notices only for changes the customer hasn't seen yet.
  function applyStatus(status, assigneeId, { quiet = false } = {}) {
    const before = { status: state.status, assigneeId: state.assigneeId };
    state.status = status;
    if (assigneeId !== undefined) state.assigneeId = assigneeId;
    if (status !== before.status) state.toldWaiting = false;
    if (status !== "open") state.assigneeId = null;
    updateSubtitle();
    if (quiet) return;
    if (status === "open") {
      if (before.status !== "open") addNotice(state.assigneeId != null ? T.withTeam : T.connecting);
      else if (before.assigneeId == null && state.assigneeId != null) addNotice(T.withTeam);
    } else if (status === "bot" && before.status === "open") {
      addNotice(T.botBack);
    } else if (status === "resolved" && before.status !== "resolved") {
      addNotice(T.resolved);
    }
  }

  // -- talking to the server -----------------------------------------------------------

  function authHeaders() {
    return { Authorization: `Bearer ${state.conversation.customer_token}` };
  }

  function conversationUrl(path) {
    return `${api}/${encodeURIComponent(state.conversation.conversation_id)}${path}`;
  }

  class HttpError extends Error {
    constructor(status, code, detail) {
      super(detail);
      this.status = status;
      this.code = code;
    }
  }

  async function httpError(response) {
    let code = "";
    let detail = `${response.status} ${response.statusText}`.trim();
    try {
      const body = await response.json();
      if (body && typeof body.detail === "string") detail = body.detail;
      if (body && typeof body.error === "string") code = body.error;
    } catch {
      /* not JSON: keep the status line */
    }
    return new HttpError(response.status, code, detail);
  }

  async function requestJson(url, options = {}) {
    const response = await fetch(url, { cache: "no-store", ...options });
    if (!response.ok) throw await httpError(response);
    return response.json();
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // Server-sent events from a fetch body: EventSource can neither POST nor send headers.
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let heldCR = "";
    let type = "message";
    let data = [];
    const takeLine = (line) => {
      if (line === "") {
        if (data.length) {
          let payload = null;
          try {
            payload = JSON.parse(data.join("\n"));
          } catch {
            payload = null;
          }
          if (payload !== null) onEvent(type, payload);
        }
        type = "message";
        data = [];
        return;
      }
      if (line.startsWith(":")) return; // a comment, e.g. the server's keep-alive ping
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
    };
    for (;;) {
      const { value, done } = await reader.read();
      let chunk = heldCR + (done ? decoder.decode() : decoder.decode(value, { stream: true }));
      heldCR = "";
      // A CR at a chunk's end may be half of a CRLF: wait for the next chunk to know.
      if (!done && chunk.endsWith("\r")) {
        heldCR = "\r";
        chunk = chunk.slice(0, -1);
      }
      buffer += chunk.replace(/\r\n?/g, "\n");
      const lines = buffer.split("\n");
      buffer = lines.pop();
      for (const line of lines) takeLine(line);
      if (done) {
        if (buffer) takeLine(buffer);
        takeLine("");
        return;
      }
    }
  }

  // -- starting and restoring --------------------------------------------------------------

  function ensureConversation() {
    if (!state.starting) {
      const saved = storage.load();
      state.starting = (saved ? restore(saved) : startNew()).catch((error) => {
        state.starting = null; // the next attempt starts over
        throw error;
      });
    }
    return state.starting;
  }

  async function startNew() {
    const typing = showTyping();
    try {
      const started = await requestJson(api, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ bot }),
      });
      state.conversation = { conversation_id: started.conversation_id, customer_token: started.customer_token };
      storage.save({ ...state.conversation, greeting: started.greeting });
      typing.remove();
      addMessage("assistant", started.greeting);
      applyStatus("bot", null, { quiet: true });
      listen();
    } catch (error) {
      typing.remove();
      showStartError(error);
      throw error;
    }
  }

  async function restore(saved) {
    state.conversation = saved;
    let history;
    try {
      history = await requestJson(conversationUrl("/messages"), { headers: authHeaders() });
    } catch (error) {
      if (error instanceof HttpError && [401, 403, 404].includes(error.status)) {
        // Deleted, or the token no longer opens it: a fresh conversation instead.
        storage.clear();
        state.conversation = null;
        return startNew();
      }
      state.conversation = null;
      showStartError(error);
      throw error;
    }
    renderHistory(history);
    listen();
  }

  function showStartError(error) {
    const detail = error instanceof HttpError ? error.message : T.offline;
    addError(`${T.startFailed} ${detail}`, {
      label: T.retry,
      run: (event) => {
        event.currentTarget.closest(".error").remove();
        ensureConversation().catch(() => {});
      },
    });
  }

  function renderHistory(history) {
    log.textContent = "";
    state.shownMessageIds.clear();
    addMessage("assistant", history.greeting);
    let stillWriting = false;
    for (const message of history.messages) {
      if (message.role === "assistant" && message.status === "generating") {
        stillWriting = true;
      } else if (message.role === "assistant" && message.status === "failed") {
        append(el("p", { className: "failed", text: T.replyFailed }));
      } else if (message.role === "user" || message.status === "complete" || tidy(message.text)) {
        addMessage(message.role, message.text, { id: message.id });
      }
    }
    applyStatus(history.status, undefined, { quiet: true });
    if (history.status === "open") addNotice(T.withTeamEarlier);
    log.scrollTop = log.scrollHeight;
    if (stillWriting) awaitReplyInProgress();
  }

  // Reloaded while a reply was being written: it is stored when done, so look again shortly.
  async function awaitReplyInProgress() {
    setBusy(true);
    const typing = showTyping();
    try {
      for (let attempt = 0; attempt < 40; attempt++) {
        await sleep(1500);
        const history = await requestJson(conversationUrl("/messages"), { headers: authHeaders() });
        if (!history.messages.some((m) => m.status === "generating")) {
          renderHistory(history);
          return;
        }
      }
    } catch {
      /* the customer can still reload */
    } finally {
      typing.remove();
      setBusy(false);
    }
  }

  // -- live events: agent replies and status changes -------------------------------------

  function listen() {
    if (state.listener) state.listener.abort();
    const controller = new AbortController();
    state.listener = controller;
    const conversation = state.conversation;
    (async () => {
      let delay = 1000;
      let connections = 0;
      while (!controller.signal.aborted) {
        const openedAt = Date.now();
        try {
          const response = await fetch(conversationUrl("/events"), {
            headers: { ...authHeaders(), Accept: "text/event-stream" },
            cache: "no-store",
            signal: controller.signal,
          });
          if ([401, 403, 404].includes(response.status)) return; // the conversation is gone
          if (!response.ok) throw await httpError(response);
          connections += 1;
          host.dataset.live = "connected";
          // Anything said while the stream was down is in the history.
          if (connections > 1) catchUp(conversation).catch(() => {});
          await readEvents(response, handleLiveEvent);
        } catch {
          if (controller.signal.aborted) return;
        }
        host.dataset.live = "reconnecting";
        delay = Date.now() - openedAt > 10000 ? 1000 : Math.min(delay * 2, 30000);
        await sleep(delay * (0.75 + Math.random() * 0.5));
      }
    })();
  }

  function handleLiveEvent(type, event) {
    const data = (event && event.data) || {};
    if (type === "message.created" && data.role === "agent") {
      if (state.shownMessageIds.has(data.message_id)) return;
      addMessage("agent", data.text || "", { id: data.message_id });
      state.toldWaiting = false;
      if (panel.hidden) setUnread(state.unread + 1);
    } else if (type === "conversation.status_changed" && typeof data.status === "string") {
      applyStatus(data.status, data.assignee_id ?? null);
    }
  }

  async function catchUp(conversation) {
    if (state.busy || state.conversation !== conversation) return;
    const history = await requestJson(conversationUrl("/messages"), { headers: authHeaders() });
    for (const message of history.messages) {
      if (message.role === "agent" && !state.shownMessageIds.has(message.id)) {
        addMessage("agent", message.text, { id: message.id });
      }
    }
    if (history.status !== state.status) applyStatus(history.status);
  }

  // -- sending ---------------------------------------------------------------------------

  async function send() {
    const text = input.value.trim();
    if (!text || state.busy) return;
    clearComposerError();
    setBusy(true);
    try {
      await ensureConversation();
    } catch {
      setBusy(false);
      return;
    }
    const userBubble = addMessage("user", text, { scroll: true });
    input.value = "";
    autosize();
    // With a person handling the conversation, nobody types right away.
    let typing = state.status === "open" ? null : showTyping();
    let reply = null;
    let streamed = "";
    let finished = false;

    const restoreDraft = () => {
      userBubble.remove();
      if (!input.value) input.value = text;
      autosize();
    };
    const stopTyping = () => {
      if (typing) typing.remove();
      typing = null;
    };

    try {
      let response;
      try {
        response = await fetch(conversationUrl("/messages"), {
          method: "POST",
          headers: { ...authHeaders(), "Content-Type": "application/json", Accept: "text/event-stream" },
          body: JSON.stringify({ text }),
          cache: "no-store",
        });
      } catch {
        stopTyping();
        restoreDraft();
        showComposerError(T.offline);
        return;
      }
      if (!response.ok) {
        const error = await httpError(response);
        stopTyping();
        restoreDraft(); // not stored: the customer can send it again
        if (error.code === "context_window_full" || [401, 403, 404].includes(error.status)) {
          showComposerError(error.status === 409 ? error.message : T.gone, {
            label: T.newConversation,
            run: startOver,
          });
        } else {
          showComposerError(error.message);
        }
        return;
      }
      await readEvents(response, (type, data) => {
        if (type === "accepted" && data.user_message_id != null) {
          userBubble.dataset.messageId = String(data.user_message_id);
          state.shownMessageIds.add(data.user_message_id);
        } else if (type === "token") {
          streamed += data.text || "";
          const visible = tidy(streamed);
          if (!visible) return; // only whitespace so far: keep the typing dots
          stopTyping();
          if (!reply) reply = addMessage("assistant", "");
          const follow = isNearBottom();
          reply.body.textContent = visible;
          if (follow) log.scrollTop = log.scrollHeight;
        } else if (type === "done") {
          finished = true;
          stopTyping();
          if (!reply) reply = addMessage("assistant", "");
          showReplyText(reply.body, typeof data.text === "string" ? data.text : streamed);
          if (data.message_id != null) {
            reply.dataset.messageId = String(data.message_id);
            state.shownMessageIds.add(data.message_id);
          }
          if (typeof data.status === "string") applyStatus(data.status);
          if (panel.hidden) setUnread(state.unread + 1);
        } else if (type === "waiting") {
          finished = true;
          stopTyping();
          if (typeof data.status === "string") applyStatus(data.status);
          if (!state.toldWaiting) addNotice(T.waiting);
          state.toldWaiting = true;
        } else if (type === "error") {
          finished = true;
          stopTyping();
          if (reply) reply.remove(); // not stored: the history will not have it either
          addError(data.detail || T.replyFailed);
        }
      });
      if (!finished) {
        stopTyping();
        addError(T.streamCut);
      }
    } catch {
      stopTyping();
      if (!finished) addError(T.streamCut);
    } finally {
      setBusy(false);
    }
  }

  // The conversation cannot go on (context window full, or gone): begin a fresh one.
  async function startOver() {
    if (state.listener) state.listener.abort();
    storage.clear();
    state.conversation = null;
    state.starting = null;
    state.status = "bot";
    state.assigneeId = null;
    clearComposerError();
    log.textContent = "";
    updateSubtitle();
    await ensureConversation().catch(() => {});
    input.focus();
  }

  // -- opening, closing, keyboard --------------------------------------------------------

  function openPanel() {
    panel.hidden = false;
    panel.setAttribute("aria-modal", String(phoneWidth.matches));
    root.classList.add("is-open");
    launcher.setAttribute("aria-expanded", "true");
    setUnread(0);
    log.scrollTop = log.scrollHeight;
    input.focus();
    ensureConversation().catch(() => {});
  }

  function closePanel() {
    panel.hidden = true;
    root.classList.remove("is-open");
    launcher.setAttribute("aria-expanded", "false");
    launcher.focus();
  }

  function autosize() {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight + 2, 140)}px`;
  }

  launcher.addEventListener("click", () => (panel.hidden ? openPanel() : closePanel()));
  closeButton.addEventListener("click", closePanel);
  const phoneWidth = window.matchMedia("(max-width: 480px)");
  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !panel.hidden) {
      event.preventDefault();
      closePanel();
    } else if (event.key === "Tab" && !panel.hidden && phoneWidth.matches) {
      keepFocusInPanel(event);
    }
  });

  // Full screen on a phone, the panel is all there is: Tab cycles inside it.
  function keepFocusInPanel(event) {
    const focusable = [...panel.querySelectorAll("button, textarea, a[href], [tabindex='0']")].filter(
      (node) => !node.disabled && node.getClientRects().length > 0,
    );
    if (!focusable.length) return;
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    const current = shadow.activeElement;
    if (event.shiftKey && current === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && current === last) {
      event.preventDefault();
      first.focus();
    }
  }
  input.addEventListener("keydown", (event) => {
    // Enter sends, Shift+Enter is a new line; never while an IME is composing (Chinese input).
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
      event.preventDefault();
      send();
    }
  });
  input.addEventListener("input", autosize);
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });

  function mount() {
    document.body.append(host);
    // A returning customer: reconnect at once, so an agent's reply shows on the launcher.
    if (storage.load()) ensureConversation().catch(() => {});
  }

  if (document.body) mount();
  else document.addEventListener("DOMContentLoaded", mount, { once: true });
})();
