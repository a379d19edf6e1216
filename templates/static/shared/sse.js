/* Server-sent events read from a fetch response body.
 *
 * EventSource cannot send an Authorization header, so signed-in pages read their streams with
 * fetch: `readEvents` parses one response body, `followEvents` keeps a stream open, reconnecting
 * with a growing, jittered delay whenever it drops.
 */

const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30000;
// A stream that stayed up this long was healthy: the next failure starts the backoff over.
const HEALTHY_STREAM_MS = 10000;

// Resolves after `ms`, or at once when `signal` aborts.
const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/* Calls `handle(type, data)` for each event in `body` (a ReadableStream) until it ends or
 * `signal` aborts; `data` is the event's data lines joined with "\n". Comments (the server's
 * keep-alive pings) and events without data are skipped. */
export async function readEvents(body, handle, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let type = "message";
  let data = [];
  const abort = () => reader.cancel().catch(() => {});
  signal.addEventListener("abort", abort);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/\r\n|\r|\n/);
        // A lone CR at the end may be the first half of a CRLF split across chunks.
        if (end < 0 || (buffer[end] === "\r" && end === buffer.length - 1)) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
        if (line === "") {
          if (data.length) handle(type, data.join("\n"));
          type = "message";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue; // a comment: the server's keep-alive ping
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let fieldValue = colon < 0 ? "" : line.slice(colon + 1);
        if (fieldValue.startsWith(" ")) fieldValue = fieldValue.slice(1);
        if (field === "event") type = fieldValue;
        else if (field === "data") data.push(fieldValue);
      }
    }
  } finally {
    signal.removeEventListener("abort", abort);
  }
}

/* Follows the event stream at `url` until `signal` aborts, calling `onEvent(type, data)` for
 * each event. Between attempts it waits 1 s, then twice as long each time up to 30 s, plus up to
 * 250 ms of jitter; a stream that stayed up 10 s starts the backoff over.
 *   headers     sent with each attempt (Accept is added)
 *   onOpen()    the stream is up (anything that happened while it was down came as no event)
 *   onRefused(response)  a refusal (not 2xx); return true to stop following
 *   onRetry(ms) the next attempt starts in `ms` */
export async function followEvents(url, { headers = {}, signal, onEvent, onOpen, onRefused, onRetry }) {
  let delay = RETRY_FIRST_MS;
  while (!signal.aborted) {
    let connectedAt = null;
    try {
      const response = await fetch(url, {
        headers: { ...headers, Accept: "text/event-stream" },
        cache: "no-store",
        signal,
      });
      if (!response.ok && onRefused && (await onRefused(response))) return;
      if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
      connectedAt = Date.now();
      onOpen?.();
      await readEvents(response.body, onEvent, signal);
    } catch {
      // a dropped or refused stream: retried below
    }
    if (signal.aborted) return;
    if (connectedAt !== null && Date.now() - connectedAt > HEALTHY_STREAM_MS) delay = RETRY_FIRST_MS;
    const wait = delay + Math.random() * 250;
    onRetry?.(wait);
    await sleep(wait, signal);
    delay = Math.min(delay * 2, RETRY_MAX_MS);
  }
}
