/* The admin page: over a chosen window, the bot's replies (rate, response times, reply speed),
 * the prefix cache (the replies' share of cached prompt tokens, and vLLM's own hit rate), the
 * engines' load, the support figures (handoffs, human response and resolution times, feedback),
 * the doubts and feedback per bot, and the bots' fixed prefixes and help centers as served now.
 * The figures come from /api/v1/admin/metrics, /api/v1/reports and /api/v1/admin/bots; all text
 * is set as text (see ../shared/dom.js). The page signs in with the tab's shared sign-in
 * (../shared/signin.js): a tab signed in on the console is signed in here.
 */

import { savedToken, request } from "../shared/api.js";
import { $, el } from "../shared/dom.js";
import { signIn, signOut } from "../shared/signin.js";
import { botsSection, showBots } from "./bots.js";
import { chartFigure, drawChart } from "./chart.js";
import { clock, fillBody, fmt, row } from "./format.js";
import { repliesSection, showReplies } from "./replies.js";
import { reportPath, showSupport, supportSection } from "./support.js";
import { showShed } from "./shed.js";
import { setTile, tile } from "./tiles.js";

const POLL_MS = 2000;
const REPORTS_EVERY_MS = 15000; // the reports and bots are queries on Postgres: asked less often
const WINDOWS = [
  [900, "the last 15 minutes"],
  [3600, "the last hour"],
  [21600, "the last 6 hours"],
  [86400, "the last 24 hours"],
];
const QUANTILE_LINES = [
  // Drawn in this order: p95 above p99, p50 on top.
  { key: "p99", label: "p99" },
  { key: "p95", label: "p95" },
  { key: "p50", label: "p50 (median)" },
];
const HIT_LINES = [
  { key: "vllm", label: "vLLM: all engine requests" },
  { key: "app", label: "app: bot replies' prompt tokens" },
];
const BOT_HEADINGS = [
  "Bot",
  "Replies",
  "Replies/s",
  "Failed",
  "Prompt tokens cached",
  "TTFT p95",
  "Response p50",
  "Response p95",
];
const root = $("admin");
let timer = null;
let reportsAt = 0;
let botsWarming = false; // asked at every poll while a bot warms, to show it warm at once

function signInForm(message) {
  clearInterval(timer);
  root.replaceChildren();
  const input = el("input", {
    id: "admin-token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
  });
  const error = el("p", { class: "error", role: "alert" }, message || "");
  const form = el(
    "form",
    { class: "signin", "aria-labelledby": "signin-title", novalidate: true },
    el("h1", { id: "signin-title" }, "prefixdesk admin"),
    el("p", { class: "hint" }, "Paste an admin's API token (pdk_…). This tab's console signs in with it too."),
    el("label", { for: "admin-token" }, "Admin API token"),
    input,
    el("button", { type: "submit" }, "Sign in"),
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      dashboard(await signIn(input.value, { admin: true }));
    } catch (failure) {
      error.textContent = failure.message;
      input.select();
    }
  });
  root.append(form);
  input.focus();
}

const section = (id, title, ...children) =>
  el("section", { class: "group", "aria-labelledby": id }, el("h2", { id }, title), ...children);

function dashboard(me) {
  root.replaceChildren();
  const windowSelect = el(
    "select",
    { id: "window", "aria-label": "Time window" },
    WINDOWS.map(([seconds, label]) => el("option", { value: String(seconds) }, label.replace(/^the last/, "Last"))),
  );
  const signOutButton = el("button", { type: "button" }, "Sign out");
  signOutButton.addEventListener("click", () => {
    signOut();
    signInForm("Signed out (here and in this tab's console).");
  });
  root.append(
    el(
      "header",
      {},
      el("h1", {}, "prefixdesk admin"),
      el("a", { href: "/console" }, "Console"),
      windowSelect,
      el("span", { id: "updated", class: "updated", "aria-live": "polite" }, ""),
      el("span", { class: "who" }, `${me.name} (admin)`),
      signOutButton,
    ),
    el("p", { id: "window-note", class: "hint" }, ""),
    section(
      "replies-title",
      "Bot replies",
      el(
        "div",
        { class: "tiles" },
        tile("replies-per-s", "Replies/s"),
        tile("replies", "Replies"),
        tile("total-p95", "Response time p95"),
        tile("ttft-p95", "Time to first token p95"),
        tile("reply-speed", "Reply speed"),
        tile("active", "Active conversations"),
      ),
    ),
    section(
      "cache-title",
      "Prefix cache",
      el(
        "div",
        { class: "tiles" },
        tile("hit-rate", "Replies' prompt tokens cached"),
        tile("vllm-hit-rate", "vLLM prefix-cache hit rate"),
      ),
      el(
        "p",
        { id: "hit-rates-explained", class: "hint" },
        "Both count prompt tokens. The first is the app's: of the bot replies' prompt tokens, the share vLLM " +
          "served from its prefix cache instead of computing them, which is what caching saves on each reply. " +
          "The second is vLLM's own counter over every request its engines ran: the replies, and also the " +
          "yes/no judges and the warm-up of each bot's prefix, so it differs by those.",
      ),
    ),
    botsSection(),
    section(
      "engine-title",
      "Engine load",
      el(
        "div",
        { class: "tiles" },
        tile("kv-cache", "KV cache use"),
        tile("queue", "Requests running / waiting"),
        tile("drafts", "Draft tokens accepted"),
        tile("checks-shed", "Checks shed under load"),
      ),
    ),
    el(
      "div",
      { class: "charts" },
      chartFigure("chart-rate", "Replies/s", [{ key: "bar", label: "replies/s per bucket" }]),
      chartFigure("chart-total", "Response time", QUANTILE_LINES),
      chartFigure("chart-ttft", "Time to first token", QUANTILE_LINES),
      chartFigure("chart-hit", "Prefix-cache hit rate", HIT_LINES),
    ),
    section(
      "bots-title",
      "Per bot",
      el("table", { id: "per-bot" }, el("thead", {}, row("th", BOT_HEADINGS)), el("tbody", {})),
    ),
    supportSection(),
    repliesSection(),
  );
  windowSelect.addEventListener("change", () => {
    reportsAt = 0;
    refresh();
  });
  reportsAt = 0;
  refresh();
  timer = setInterval(refresh, POLL_MS);
}

function showMetrics(data, windowName) {
  const t = data.totals;
  const e = data.engine;
  const now = data.engine_now;
  setTile("replies-per-s", fmt.rate(t.replies_per_s), `bot replies finished per second, over ${windowName}`);
  setTile("replies", fmt.num(t.replies), `finished in ${windowName} · ${t.errors} failed`);
  setTile(
    "total-p95",
    fmt.ms(t.total_ms.p95),
    `p50 ${fmt.ms(t.total_ms.p50)} · p99 ${fmt.ms(t.total_ms.p99)} · request to last token`,
  );
  setTile(
    "ttft-p95",
    fmt.ms(t.ttft_ms.p95),
    `p50 ${fmt.ms(t.ttft_ms.p50)} · p99 ${fmt.ms(t.ttft_ms.p99)} · request to first token`,
  );
  setTile(
    "reply-speed",
    t.reply_tokens_per_s == null ? "–" : `${t.reply_tokens_per_s} tokens/s`,
    "per reply, after its first token",
  );
  setTile("active", fmt.num(data.active_conversations), `with a bot or agent reply in ${windowName}`);
  setTile(
    "hit-rate",
    fmt.pct(t.hit_rate),
    `${t.cached_tokens} of ${t.prompt_tokens} prompt tokens of the bot's replies`,
  );
  setTile(
    "vllm-hit-rate",
    fmt.pct(e.hit_rate),
    `${e.prefix_cache_hits} of ${e.prefix_cache_queries} tokens looked up, all engine requests`,
  );
  setTile(
    "kv-cache",
    fmt.pct(e.kv_cache_usage_mean),
    `mean over ${windowName} · now ${fmt.pct(now.kv_cache_usage)} (${now.processes} engine process(es))`,
  );
  setTile(
    "queue",
    e.running_mean == null ? "–" : `${e.running_mean} / ${e.waiting_mean}`,
    `mean per engine · now ${now.running} / ${now.waiting}`,
  );
  setTile(
    "drafts",
    fmt.pct(e.draft_acceptance_rate),
    e.draft_tokens
      ? `${e.accepted_tokens} of ${e.draft_tokens} speculative drafts kept`
      : "no drafts: speculative decoding off or idle",
  );
  showShed(data.checks_shed, windowName);
  const span = { from: data.now - data.window_s, to: data.now, step: data.step_s, series: data.series };
  const quantiles = (key) => QUANTILE_LINES.map(({ key: q }) => ({ key: q, get: (p) => p[key][q] }));
  drawChart("chart-rate", { ...span, bars: { get: (p) => p.replies_per_s }, format: (v) => fmt.rate(v) });
  drawChart("chart-total", { ...span, lines: quantiles("total_ms"), format: fmt.ms });
  drawChart("chart-ttft", { ...span, lines: quantiles("ttft_ms"), format: fmt.ms });
  drawChart("chart-hit", {
    ...span,
    lines: [
      { key: "vllm", get: (p) => p.engine.hit_rate },
      { key: "app", get: (p) => p.hit_rate },
    ],
    format: fmt.pct,
  });
  const bots = Object.entries(data.per_bot);
  const perBot = bots.map(([bot, b]) => [
    bot,
    fmt.num(b.replies),
    fmt.rate(b.replies_per_s),
    fmt.num(b.errors),
    fmt.pct(b.hit_rate),
    fmt.ms(b.ttft_ms.p95),
    fmt.ms(b.total_ms.p50),
    fmt.ms(b.total_ms.p95),
  ]);
  fillBody($("per-bot"), perBot, BOT_HEADINGS.length, "No bot replies in this window");
}

async function refresh() {
  const seconds = Number($("window").value);
  const windowName = WINDOWS.find(([s]) => s === seconds)[1];
  const withReports = Date.now() - reportsAt >= REPORTS_EVERY_MS;
  const withBots = withReports || botsWarming;
  try {
    const [data, report, replies, bots] = await Promise.all([
      request(`/api/v1/admin/metrics?window=${seconds}`),
      withReports ? request(reportPath(seconds)) : null,
      withReports ? request(reportPath(seconds, "/replies")) : null,
      withBots ? request("/api/v1/admin/bots") : null,
    ]);
    // A poll of the window chosen before may answer after the refresh of the new one: drop it.
    if (seconds !== Number($("window").value)) return;
    showMetrics(data, windowName);
    if (withReports) {
      reportsAt = Date.now();
      showSupport(report);
      showReplies(replies);
    }
    if (withBots) botsWarming = showBots(bots);
    $("window-note").textContent =
      `Every figure below covers ${windowName}, except the engines' "now" figures and the bots' ` +
      "prefixes and help centers.";
    $("updated").textContent = `updated ${clock(data.now, { seconds: true })} · ${data.step_s} s buckets`;
  } catch (failure) {
    if (failure.status === 401 || failure.status === 403) {
      if (failure.status === 401) signOut(); // revoked: the console's sign-in is gone as well
      signInForm(failure.message);
      return;
    }
    $("updated").textContent = `not updated: ${failure.message}`;
  }
}

if (savedToken()) {
  request("/api/v1/me")
    .then((me) =>
      me.role === "admin"
        ? dashboard(me)
        : signInForm(`${me.name} is an agent: this page needs an admin's API token.`),
    )
    .catch((failure) => {
      if (failure.status === 401) signOut();
      signInForm(failure.message);
    });
} else {
  signInForm();
}
