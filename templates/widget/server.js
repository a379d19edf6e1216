  // server.js: requests to the widget API, its errors, and server-sent events from a fetch body.

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

  // What to tell the customer about a failed request, in the widget's language (never the
  // server's English words: those go to the console, for the page's developer). `count`: the
  // length of the message that was refused.
  function explain(error, { count = null } = {}) {
    if (!(error instanceof HttpError)) return T.offline;
    console.warn(`prefixdesk widget: the server answered ${error.status} (${error.code}): ${error.message}`);
    if (error.code === "identity_not_verified") return T.identityRefused;
    if (error.status === 410) return T.deleted; // erased on request
    if ([401, 403, 404].includes(error.status)) return T.gone;
    if (error.code === "context_window_full") return T.conversationFull;
    if (error.status === 409) return T.stillReplying;
    if (error.status === 413 && count != null && state.limit != null) return T.tooLong(count, state.limit);
    if (error.status === 413 || error.status === 422) return T.cannotSend;
    if (error.status === 429) return T.tooMany;
    if (error.status === 503) return T.busy;
    return T.unexpected;
  }

  // The page's origin is not allowed to call the server (its preflights get a 403).
  class NotAllowedError extends Error {}

  // The server's widget config, once per page: its message size limit, and whether this page's
  // origin may use it. Any origin may read it, so a widget on a page that is not allowed can say so.
  function loadConfig() {
    if (!state.config) {
      state.config = requestJson(`${server}/api/v1/widget/config`).then(
        (config) => {
          state.limit = config.max_message_chars;
          updateCounter();
          if (!config.origin_allowed) {
            state.config = null; // an admin may allow it meanwhile: ask again on the next try
            tellDeveloper(config);
            throw new NotAllowedError();
          }
          return config;
        },
        (error) => {
          state.config = null;
          throw error;
        },
      );
    }
    return state.config;
  }

  // The exact setting that lets this page use the chat, for whoever embeds the widget.
  function tellDeveloper(config) {
    if (state.toldDeveloper) return;
    state.toldDeveloper = true;
    const origin = config.origin || location.origin;
    console.error(
      `prefixdesk widget: this page's origin ${origin} is not allowed to use the chat at ${serverOrigin}. ` +
        `Add it to ${config.origins_setting} (e.g. ${config.origins_setting}='${JSON.stringify([origin])}'), ` +
        `or without a restart: POST {"origin": "${origin}"} to ${serverOrigin}/api/v1/admin/widget-origins ` +
        `with an admin token. Scheme, host and port must match exactly.`,
    );
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
