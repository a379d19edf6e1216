"""The routing benchmark as a PNG: per way, QPS, time to first token and the cache's hits
(matplotlib, the `bench` extra)."""

from pathlib import Path

from backend.bench.plots import _pyplot

PANELS = (
    ("qps", "QPS (turns per second)", 1.0, "%.2f"),
    ("ttft_ms_p50", "time to first token, p50 (s)", 0.001, "%.2f"),
    ("vllm_prefix_cache_hit_rate", "vLLM prefix-cache hit rate (%)", 100.0, "%.2f"),
    ("cached_share_of_history", "history cached, turns 2+ (%)", 100.0, "%.1f"),
)


def routing(results: dict, path: Path) -> Path:
    """One bar per way in each panel, the ways in the order they ran."""
    plt = _pyplot()
    names = list(results["ways"])
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 4.6))
    for ax, (key, title, scale, fmt) in zip(axes, PANELS, strict=True):
        values = [results["ways"][name][key] * scale for name in names]
        bars = ax.bar(range(len(names)), values, color="#2f6fdf")
        ax.bar_label(bars, fmt=fmt, fontsize=8)
        ax.set_xticks(range(len(names)), names, fontsize=8, rotation=30, ha="right")
        ax.set_title(title, fontsize=10)
    first = results["ways"][names[0]]
    fig.suptitle(
        f"{first['conversations']} conversations, {first['turns']} replies per way, "
        f"{results['replicas']} replicas of {results['model']} behind each way",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
