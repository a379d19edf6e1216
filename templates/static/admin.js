// The admin page: QPS, response times, prefix-cache hit rate and engine load, live.
// Every figure comes from /api/v1/admin/metrics; all text is set with textContent.
(() => {
  "use strict";
  const TOKEN_KEY = "prefixdesk.adminToken";
  const POLL_MS = 2000;
  const root = document.getElementById("admin");
  const svgNS = "http://www.w3.org/2000/svg";
  let timer = null;

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child);
    return node;
  }

  async function api(path) {
    const response = await fetch(path, {
      headers: { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` },
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.detail || `HTTP ${response.status}`);
    return body;
  }

  const fmt = {
    ms: (v) => (v == null ? "–" : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`),
    pct: (v) => (v == null ? "–" : `${(v * 100).toFixed(1)}%`),
    num: (v) => (v == null ? "–" : String(v)),
    qps: (v) => (v == null ? "–" : v.toFixed(v < 1 ? 3 : 2)),
  };

  function signIn(message) {
    clearInterval(timer);
    root.replaceChildren();
    const input = el("input", { id: "admin-token", type: "password", autocomplete: "off", required: "" });
    const error = el("p", { class: "error", role: "alert" }, message || "");
    const form = el(
      "form", { class: "signin", "aria-labelledby": "signin-title" },
      el("h1", { id: "signin-title" }, "prefixdesk admin"),
      el("label", { for: "admin-token" }, "Admin API token"),
      input, el("button", { type: "submit" }, "Sign in"), error,
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

  function dashboard(me) {
    root.replaceChildren();
    const windowSelect = el("select", { id: "window", "aria-label": "Time window" });
    for (const [seconds, label] of [[900, "Last 15 minutes"], [3600, "Last hour"],
                                     [21600, "Last 6 hours"], [86400, "Last 24 hours"]]) {
      windowSelect.append(el("option", { value: String(seconds) }, label));
    }
    const signOut = el("button", { type: "button" }, "Sign out");
    signOut.addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); signIn(); });
    const status = el("span", { id: "updated", class: "updated", "aria-live": "polite" }, "");
    root.append(
      el("header", {}, el("h1", {}, "prefixdesk admin"), windowSelect, status,
         el("span", { class: "who" }, `${me.name} (admin)`), signOut),
      el("div", { class: "tiles" },
         tile("qps", "QPS"), tile("replies", "Replies"), tile("total-p95", "Response time p95"),
         tile("ttft-p95", "Time to first token p95"), tile("hit-rate", "Prefix-cache hit rate"),
         tile("kv-cache", "KV cache use"), tile("queue", "Running / waiting"),
         tile("active", "Active conversations")),
      el("div", { class: "charts" },
         chartBox("chart-qps", "Replies per second"), chartBox("chart-total", "Response time (ms)"),
         chartBox("chart-ttft", "Time to first token (ms)"), chartBox("chart-hit", "Cache hit rate (%)")),
      el("section", { "aria-labelledby": "bots-title" },
         el("h2", { id: "bots-title" }, "Per bot"),
         el("table", { id: "per-bot" },
            el("thead", {}, row("th", ["Bot", "Replies", "QPS", "Hit rate", "TTFT p95", "Total p50",
                                        "Total p95", "Errors"])),
            el("tbody", {}))),
    );
    windowSelect.addEventListener("change", refresh);
    refresh();
    timer = setInterval(refresh, POLL_MS);
  }

  function row(cell, values) {
    return el("tr", {}, ...values.map((v) => el(cell, {}, v)));
  }

  function chartBox(id, title) {
    const svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("id", id);
    svg.setAttribute("viewBox", "0 0 400 160");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", title);
    return el("figure", { class: "chart" }, el("figcaption", {}, title), svg);
  }

  const COLORS = ["#2563eb", "#d97706", "#dc2626"];

  function drawChart(id, series, lines) {
    const svg = document.getElementById(id);
    svg.replaceChildren();
    const values = series.flatMap((p) => lines.map((line) => line.get(p)).filter((v) => v != null));
    const max = Math.max(1e-9, ...values) * 1.1;
    const x = (i) => 36 + (i / Math.max(1, series.length - 1)) * 356;
    const y = (v) => 148 - (v / max) * 136;
    for (const fraction of [0, 0.5, 1]) {
      const line = document.createElementNS(svgNS, "line");
      Object.entries({ x1: 36, x2: 392, y1: y(max * fraction / 1.1), y2: y(max * fraction / 1.1),
                       class: "grid" }).forEach(([k, v]) => line.setAttribute(k, v));
      const label = document.createElementNS(svgNS, "text");
      label.setAttribute("x", 2);
      label.setAttribute("y", y(max * fraction / 1.1) + 4);
      label.textContent = (max * fraction / 1.1).toFixed(max < 10 ? 2 : 0);
      svg.append(line, label);
    }
    lines.forEach((line, index) => {
      const points = series.map((p, i) => [x(i), line.get(p)]).filter(([, v]) => v != null);
      if (!points.length) return;
      const path = document.createElementNS(svgNS, "polyline");
      path.setAttribute("points", points.map(([px, v]) => `${px},${y(v)}`).join(" "));
      path.setAttribute("stroke", COLORS[index % COLORS.length]);
      path.setAttribute("class", "series");
      const legend = document.createElementNS(svgNS, "text");
      legend.setAttribute("x", 300 - index * 50);
      legend.setAttribute("y", 12);
      legend.setAttribute("fill", COLORS[index % COLORS.length]);
      legend.textContent = line.label;
      svg.append(path, legend);
    });
  }

  function set(id, value, sub) {
    document.getElementById(id).textContent = value;
    if (sub !== undefined) document.getElementById(`${id}-sub`).textContent = sub;
  }

  async function refresh() {
    const seconds = document.getElementById("window").value;
    let data;
    try {
      data = await api(`/api/v1/admin/metrics?window=${seconds}`);
    } catch (failure) {
      if (/token|admin/.test(failure.message)) return signIn(failure.message);
      document.getElementById("updated").textContent = `not updated: ${failure.message}`;
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
    set("hit-rate", fmt.pct(t.hit_rate),
        `${t.cached_tokens} of ${t.prompt_tokens} prompt tokens · vLLM since start: ${fmt.pct(e.vllm_hit_rate)}`);
    set("kv-cache", fmt.pct(e.kv_cache_usage), `${e.processes} engine process(es)`);
    set("queue", `${e.running} / ${e.waiting}`, "requests in the engine");
    set("active", fmt.num(data.active_conversations), "with a message in 15 min");
    const series = data.series;
    drawChart("chart-qps", series, [{ label: "QPS", get: (p) => p.qps }]);
    drawChart("chart-total", series, ["p50", "p95", "p99"].map((q) => ({ label: q, get: (p) => p.total_ms[q] })));
    drawChart("chart-ttft", series, ["p50", "p95", "p99"].map((q) => ({ label: q, get: (p) => p.ttft_ms[q] })));
    drawChart("chart-hit", series, [{ label: "hit %", get: (p) => (p.hit_rate == null ? null : p.hit_rate * 100) }]);
    const body = document.querySelector("#per-bot tbody");
    body.replaceChildren(...Object.entries(data.per_bot).map(([bot, b]) => row("td", [
      bot, fmt.num(b.replies), fmt.qps(b.qps), fmt.pct(b.hit_rate), fmt.ms(b.ttft_ms.p95),
      fmt.ms(b.total_ms.p50), fmt.ms(b.total_ms.p95), fmt.num(b.errors)])));
    document.getElementById("updated").textContent =
      `updated ${new Date(data.now * 1000).toLocaleTimeString()} · ${data.step_s}s buckets`;
  }

  if (sessionStorage.getItem(TOKEN_KEY)) {
    api("/api/v1/me").then((me) => (me.role === "admin" ? dashboard(me) : signIn("this page needs an admin token")))
      .catch((failure) => signIn(failure.message));
  } else {
    signIn();
  }
})();
