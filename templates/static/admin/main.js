/* The admin page: QPS, response times, prefix-cache hit rate and engine load, live, and the
 * doubts and customers' feedback on the bots' replies. The figures come from /api/v1/admin/metrics and
 * /api/v1/reports/replies; all text is set as text (see ../shared/dom.js). */

import { request } from "../shared/api.js";
import { $, el, svgEl } from "../shared/dom.js";
import { repliesPath, repliesSection, showReplies } from "./replies.js";
import { fmt, row } from "./format.js";

const TOKEN_KEY = "prefixdesk.adminToken";
const POLL_MS = 2000;
const WINDOWS = [
  [900, "Last 15 minutes"],
  [3600, "Last hour"],
  [21600, "Last 6 hours"],
  [86400, "Last 24 hours"],
];
const COLORS = ["#2563eb", "#d97706", "#dc2626"];
const root = $("admin");
let timer = null;

const api = (path) => request(path, { token: sessionStorage.getItem(TOKEN_KEY) });

function signIn(message) {
  clearInterval(timer);
  root.replaceChildren();
  const input = el("input", { id: "admin-token", type: "password", autocomplete: "off", required: true });
  const error = el("p", { class: "error", role: "alert" }, message || "");
  const form = el(
    "form",
    { class: "signin", "aria-labelledby": "signin-title" },
    el("h1", { id: "signin-title" }, "prefixdesk admin"),
    el("label", { for: "admin-token" }, "Admin API token"),
    input,
    el("button", { type: "submit" }, "Sign in"),
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    try {
      const me = await api("/api/v1/me");
      if (me.role !== "admin") throw new Error("this page needs an admin token");
      dashboard(me);
    } catch (failure) {
      sessionStorage.removeItem(TOKEN_KEY);
      error.textContent = failure.message;
    }
  });
  root.append(form);
  input.focus();
}

function tile(id, label) {
  const value = el("div", { class: "value", id }, "–");
  const sub = el("div", { class: "sub", id: `${id}-sub` }, "");
  return el("section", { class: "tile", "aria-label": label }, el("h2", {}, label), value, sub);
}

function chartBox(id, title) {
  const svg = svgEl("svg", { id, viewBox: "0 0 400 160", role: "img", "aria-label": title });
  return el("figure", { class: "chart" }, el("figcaption", {}, title), svg);
}

function dashboard(me) {
  root.replaceChildren();
  const windowSelect = el(
    "select",
    { id: "window", "aria-label": "Time window" },
    WINDOWS.map(([seconds, label]) => el("option", { value: String(seconds) }, label)),
  );
  const signOut = el("button", { type: "button" }, "Sign out");
  signOut.addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    signIn();
  });
  const status = el("span", { id: "updated", class: "updated", "aria-live": "polite" }, "");
  const headings = ["Bot", "Replies", "QPS", "Hit rate", "TTFT p95", "Total p50", "Total p95", "Errors"];
  root.append(
    el(
      "header",
      {},
      el("h1", {}, "prefixdesk admin"),
      windowSelect,
      status,
      el("span", { class: "who" }, `${me.name} (admin)`),
      signOut,
    ),
    el(
      "div",
      { class: "tiles" },
      tile("qps", "QPS"),
      tile("replies", "Replies"),
      tile("total-p95", "Response time p95"),
      tile("ttft-p95", "Time to first token p95"),
      tile("reply-speed", "Reply speed"),
      tile("hit-rate", "Prefix-cache hit rate"),
      tile("kv-cache", "KV cache use"),
      tile("queue", "Running / waiting"),
      tile("active", "Active conversations"),
    ),
    el(
      "div",
      { class: "charts" },
      chartBox("chart-qps", "Replies per second"),
      chartBox("chart-total", "Response time (ms)"),
      chartBox("chart-ttft", "Time to first token (ms)"),
      chartBox("chart-hit", "Cache hit rate (%)"),
    ),
    el(
      "section",
      { "aria-labelledby": "bots-title" },
      el("h2", { id: "bots-title" }, "Per bot"),
      el("table", { id: "per-bot" }, el("thead", {}, row("th", headings)), el("tbody", {})),
    ),
    repliesSection(),
  );
  windowSelect.addEventListener("change", refresh);
  refresh();
  timer = setInterval(refresh, POLL_MS);
}

// One line per entry of `lines` ({label, get(point)}) over `series`, on three grid lines.
function drawChart(id, series, lines) {
  const svg = $(id);
  svg.replaceChildren();
  const values = series.flatMap((p) => lines.map((line) => line.get(p)).filter((v) => v != null));
  const max = Math.max(1e-9, ...values) * 1.1;
  const x = (i) => 36 + (i / Math.max(1, series.length - 1)) * 356;
  const y = (v) => 148 - (v / max) * 136;
  for (const fraction of [0, 0.5, 1]) {
    const level = (max * fraction) / 1.1;
    svg.append(
      svgEl("line", { x1: 36, x2: 392, y1: y(level), y2: y(level), class: "grid" }),
      svgEl("text", { x: 2, y: y(level) + 4 }, level.toFixed(max < 10 ? 2 : 0)),
    );
  }
  lines.forEach((line, index) => {
    const points = series.map((p, i) => [x(i), line.get(p)]).filter(([, v]) => v != null);
    if (!points.length) return;
    const color = COLORS[index % COLORS.length];
    svg.append(
      svgEl("polyline", {
        points: points.map(([px, v]) => `${px},${y(v)}`).join(" "),
        stroke: color,
        class: "series",
      }),
      svgEl("text", { x: 300 - index * 50, y: 12, fill: color }, line.label),
    );
  });
}

function set(id, value, sub) {
  $(id).textContent = value;
  if (sub !== undefined) $(`${id}-sub`).textContent = sub;
}

async function refresh() {
  const seconds = $("window").value;
  let data;
  let replies;
  try {
    [data, replies] = await Promise.all([
      api(`/api/v1/admin/metrics?window=${seconds}`),
      api(repliesPath(seconds)),
    ]);
  } catch (failure) {
    if (/token|admin/.test(failure.message)) return signIn(failure.message);
    $("updated").textContent = `not updated: ${failure.message}`;
    return;
  }
  const t = data.totals;
  const e = data.engine;
  const lastMinute = data.series.slice(-Math.max(1, Math.round(60 / data.step_s)));
  const recentQps = lastMinute.reduce((sum, p) => sum + p.replies, 0) / (lastMinute.length * data.step_s);
  set("qps", fmt.qps(t.qps), `window average · last minute ${fmt.qps(recentQps)}`);
  set("replies", fmt.num(t.replies), `${t.errors} failed`);
  set("total-p95", fmt.ms(t.total_ms.p95), `p50 ${fmt.ms(t.total_ms.p50)} · p99 ${fmt.ms(t.total_ms.p99)}`);
  set("ttft-p95", fmt.ms(t.ttft_ms.p95), `p50 ${fmt.ms(t.ttft_ms.p50)} · p99 ${fmt.ms(t.ttft_ms.p99)}`);
  set(
    "reply-speed",
    t.reply_tokens_per_s == null ? "–" : `${t.reply_tokens_per_s} tokens/s`,
    e.draft_tokens
      ? `after the first token · drafts accepted ${fmt.pct(e.draft_acceptance_rate)}`
      : "after the first token · speculative decoding off",
  );
  set(
    "hit-rate",
    fmt.pct(t.hit_rate),
    `${t.cached_tokens} of ${t.prompt_tokens} prompt tokens · vLLM since start: ${fmt.pct(e.vllm_hit_rate)}`,
  );
  set("kv-cache", fmt.pct(e.kv_cache_usage), `${e.processes} engine process(es)`);
  set("queue", `${e.running} / ${e.waiting}`, "requests in the engine");
  set("active", fmt.num(data.active_conversations), "with a message in 15 min");
  const series = data.series;
  const quantiles = (key) => ["p50", "p95", "p99"].map((q) => ({ label: q, get: (p) => p[key][q] }));
  drawChart("chart-qps", series, [{ label: "QPS", get: (p) => p.qps }]);
  drawChart("chart-total", series, quantiles("total_ms"));
  drawChart("chart-ttft", series, quantiles("ttft_ms"));
  drawChart("chart-hit", series, [{ label: "hit %", get: (p) => (p.hit_rate == null ? null : p.hit_rate * 100) }]);
  $("per-bot").querySelector("tbody").replaceChildren(
    ...Object.entries(data.per_bot).map(([bot, b]) =>
      row("td", [
        bot,
        fmt.num(b.replies),
        fmt.qps(b.qps),
        fmt.pct(b.hit_rate),
        fmt.ms(b.ttft_ms.p95),
        fmt.ms(b.total_ms.p50),
        fmt.ms(b.total_ms.p95),
        fmt.num(b.errors),
      ]),
    ),
  );
  showReplies(replies);
  $("updated").textContent = `updated ${new Date(data.now * 1000).toLocaleTimeString()} · ${data.step_s}s buckets`;
}

if (sessionStorage.getItem(TOKEN_KEY)) {
  api("/api/v1/me")
    .then((me) => (me.role === "admin" ? dashboard(me) : signIn("this page needs an admin token")))
    .catch((failure) => signIn(failure.message));
} else {
  signIn();
}
