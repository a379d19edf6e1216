"""PNG plots of one benchmark run (matplotlib, the `bench` extra)."""

from pathlib import Path

from backend.bench.figures import WAY_ORDER
from backend.bench.workloads import CONCURRENCY

COLORS = {"off": "#b0b7c3", "on": "#2f6fdf"}
# Scenarios with plots of their own, not in the on/off and ways comparisons.
OWN_PLOTS = ("speculative", "knowledge", "capacity")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def on_vs_off(scenarios: dict, path: Path) -> Path | None:
    """Total time and QPS with caching off and on, per scenario (its headline way)."""
    names = [n for n, r in scenarios.items() if "on" in r and "off" in r and n not in OWN_PLOTS]
    if not names:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.38
    for ax, key, title in ((axes[0], "total_s", "total time (s)"), (axes[1], "qps", "QPS")):
        for offset, mode in ((-width / 2, "off"), (width / 2, "on")):
            values = [scenarios[n][mode][key] for n in names]
            bars = ax.bar(
                [i + offset for i in range(len(names))],
                values,
                width,
                label=f"caching {mode}",
                color=COLORS[mode],
            )
            ax.bar_label(bars, fmt="%.3g", fontsize=8)
        ax.set_xticks(range(len(names)), [f"{n}\n({scenarios[n]['way']})" for n in names])
        ax.set_title(title)
        ax.legend()
    fig.suptitle("prefix caching off vs on")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def ways(scenarios: dict, path: Path) -> Path | None:
    """QPS of the app over HTTP, the bare engine and vLLM's own server, caching off and on."""
    names = [n for n, r in scenarios.items() if len(r.get("ways", {})) > 1 and n not in OWN_PLOTS]
    if not names:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    width = 0.38
    for ax, name in zip(axes[0], names, strict=True):
        present = [w for w in WAY_ORDER if w in scenarios[name]["ways"]]
        for offset, mode in ((-width / 2, "off"), (width / 2, "on")):
            values = [scenarios[name]["ways"][w].get(mode, {}).get("qps", 0) for w in present]
            bars = ax.bar(
                [i + offset for i in range(len(present))],
                values,
                width,
                label=f"caching {mode}",
                color=COLORS[mode],
            )
            ax.bar_label(bars, fmt="%.3g", fontsize=8)
        ax.set_xticks(range(len(present)), present)
        ax.set_title(f"{name}: QPS")
        ax.legend(loc="upper left")
    fig.suptitle("app over HTTP vs bare engine vs vLLM's OpenAI server")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def latency_vs_rate(scenarios: dict, path: Path) -> Path | None:
    """Open-loop latency (p50, p95) against the arrival rate."""
    rows = scenarios.get("support", {}).get("by_rate")
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode in ("off", "on"):
        points = [(r["rate"], r[mode]) for r in rows if mode in r]
        if not points:
            continue
        rates = [rate for rate, _ in points]
        ax.plot(
            rates,
            [f["latency_ms_p50"] / 1000 for _, f in points],
            "o-",
            color=COLORS[mode],
            label=f"caching {mode}, p50",
        )
        ax.plot(
            rates,
            [f["latency_ms_p95"] / 1000 for _, f in points],
            "s--",
            color=COLORS[mode],
            label=f"caching {mode}, p95",
        )
    ax.set_xlabel("arrival rate (requests/s)")
    ax.set_ylabel("response time (s)")
    ax.set_yscale("log")
    ax.set_title("support traffic: response time vs arrival rate")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def speculative(scenarios: dict, path: Path) -> Path | None:
    """Reply tokens/s and reply time against concurrent conversations, speculation off and on."""
    result = scenarios.get("speculative")
    if not result:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for way, modes in result["ways"].items():
        style = "-" if way == result["way"] else ":"
        for mode in ("off", "on"):
            parts = sorted((int(p[1:]), f) for p, f in modes.get(mode, {}).items() if p[1:].isdigit())
            if not parts:
                continue
            label = f"{way}, speculation {mode}"
            counts = [c for c, _ in parts]
            axes[0].plot(
                counts, [f["tokens_per_s"] for _, f in parts], "o" + style, color=COLORS[mode], label=label
            )
            axes[1].plot(
                counts,
                [f["latency_ms_p50"] / 1000 for _, f in parts],
                "o" + style,
                color=COLORS[mode],
                label=label,
            )
    for ax, title in ((axes[0], "reply tokens/s (all conversations)"), (axes[1], "reply time p50 (s)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(CONCURRENCY, [str(c) for c in CONCURRENCY])
        ax.set_xlabel("conversations at once")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("prompt-lookup speculative decoding off vs on (caching on)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def knowledge(scenarios: dict, path: Path) -> Path | None:
    """The help-center bot: first-token time by concurrency, caching off and on; and on the
    retrieval path, the cached share of each turn."""
    result = scenarios.get("knowledge")
    if not result or not ("on" in result or "off" in result):
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    levels = sorted({int(k) for m in ("off", "on") for k in result.get(m, {}).get("by_concurrency", {})})
    width = 0.38
    for offset, mode in ((-width / 2, "off"), (width / 2, "on")):
        parts = result.get(mode, {}).get("by_concurrency", {})
        points = [(i, parts[str(level)]) for i, level in enumerate(levels) if str(level) in parts]
        if not points:
            continue
        bars = axes[0].bar(
            [i + offset for i, _ in points],
            [f["ttft_ms_p50"] / 1000 for _, f in points],
            width,
            label=f"caching {mode}",
            color=COLORS[mode],
        )
        axes[0].bar_label(bars, fmt="%.3g", fontsize=8)
    axes[0].set_yscale("log")
    axes[0].set_xticks(range(len(levels)), [str(level) for level in levels])
    axes[0].set_xlabel("questions at once (each a new conversation)")
    axes[0].set_title(f"first token p50 (s), prefix of {result.get('prefix_tokens')} tokens")
    axes[0].legend()
    retrieval = result.get("retrieval")
    if retrieval:
        rows = retrieval["by_turn"]
        axes[1].bar(
            [r["turn"] for r in rows],
            [(r["cached_share_of_cacheable"] or 0) * 100 for r in rows],
            color=COLORS["on"],
        )
        axes[1].set_ylim(0, 105)
        prefix = retrieval["prefix_tokens"]
        axes[1].set_xlabel(f"turn (prefix of {prefix} tokens)")
        axes[1].set_title("retrieval path: cached / cacheable tokens (%)")
    else:
        axes[1].axis("off")
    fig.suptitle("a long help center in the fixed prefix (tallybook-en)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def capacity(scenarios: dict, path: Path) -> Path | None:
    """Returning customers' history found again and first-token time against the live
    conversations, KV tier off and on."""
    ways = {
        tier: result
        for tier, result in scenarios.get("capacity", {}).get("ways", {}).items()
        if result.get("levels")
    }
    if not ways:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for tier, result in ways.items():
        rows = result["levels"]
        x = [row["conversations"] for row in rows]
        style = {"color": COLORS[tier], "label": f"KV tier {tier}"}
        axes[0].plot(x, [(row["history_hit_rate"] or 0) * 100 for row in rows], "o-", **style)
        axes[1].plot(x, [row["ttft_ms_p50"] / 1000 for row in rows], "o-", **style)
    axes[0].set_ylim(-5, 105)
    axes[0].set_ylabel("returning customers: own history from cache (%)")
    axes[1].set_ylim(bottom=0)
    axes[1].set_ylabel("returning customers: first token p50 (s)")
    for ax in axes:
        ax.set_xlabel("live conversations")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    first = next(iter(ways.values()))
    tokens = f"{first['kv_cache_tokens']:,}" if first.get("kv_cache_tokens") else "?"
    fig.suptitle(
        f"KV cache {first['kv_cache_gib']:g} GiB ({tokens} tokens): returning {first['bot']} customers"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_all(scenarios: dict, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    made = [
        on_vs_off(scenarios, folder / "on_vs_off.png"),
        ways(scenarios, folder / "ways.png"),
        latency_vs_rate(scenarios, folder / "latency_vs_rate.png"),
        speculative(scenarios, folder / "speculative.png"),
        knowledge(scenarios, folder / "knowledge.png"),
        capacity(scenarios, folder / "capacity.png"),
    ]
    return [p for p in made if p is not None]
