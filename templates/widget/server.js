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
