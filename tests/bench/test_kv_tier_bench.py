"""The KV tier's figures: `restart` read from the app's log and compared, and `capacity`'s
tier way read against the run without it. The runs themselves are in
tests/e2e/cli/test_bench_command.py."""

from backend.bench import restart
from backend.bench.capacity_results import tier_beyond_memory
from backend.bench.goals import targets


def level(conversations: int, history: float, ttft: float) -> dict:
    return {"conversations": conversations, "history_hit_rate": history, "ttft_ms_p50": ttft}


def test_the_tier_is_read_at_twice_the_conversations_where_the_cache_alone_let_go():
    off = {"fall_off_at": 30, "levels": [level(16, 1.0, 400), level(24, 1.0, 600), level(30, 0.02, 4000)]}
    on = {"levels": [level(16, 1.0, 420), level(30, 0.97, 700), level(60, 0.95, 900), level(64, 0.9, 950)]}
    beyond = tier_beyond_memory(off, on)
    assert beyond["at_conversations"] == 60 and beyond["twice_the_fall_off_reached"] is True
    assert beyond["warm_ttft_ms_p50"] == 500 and beyond["ttft_vs_warm"] == 1.8
    by_name = {row["target"]: row for row in targets({"capacity": {"tier": beyond}})}
    assert by_name["capacity: history hit rate at twice the fall-off, tier on"]["met"] is True
    assert by_name["capacity: TTFT p50 at twice the fall-off, tier on / warm"]["met"] is True
    # Not measured that far: the figures are the last level's, and the targets stay unmeasured.
    short = tier_beyond_memory(off, {"levels": on["levels"][:2]})
    assert short["at_conversations"] == 30 and short["twice_the_fall_off_reached"] is False
    by_name = {row["target"]: row for row in targets({"capacity": {"tier": short}})}
    assert by_name["capacity: history hit rate at twice the fall-off, tier on"]["value"] is None


def test_a_restart_reads_what_each_bot_found_cached_from_the_apps_log(tmp_path):
    log = tmp_path / "app.log"
    log.write_text(
        "INFO backend.bots.registry: bot shop-en warm (900 prefix tokens; "
        "896 of its fixed prompts' 1200 tokens found cached)\n"
        "INFO: GET /readyz 503\n"
        "INFO backend.bots.registry: bot tallybook-en warm (15300 prefix tokens; "
        "0 of its fixed prompts' 15600 tokens found cached)\n"
    )
    assert restart._warmed(log) == {
        "shop-en": {"prefix_tokens": 900, "fixed_tokens": 1200, "found_cached": 896},
        "tallybook-en": {"prefix_tokens": 15300, "fixed_tokens": 15600, "found_cached": 0},
    }


def test_restart_figures_side_by_side():
    answers = {"off": {"shop-en": {"text": "30 days."}}, "on": {"shop-en": {"text": "30 days."}}}
    assert restart._same_replies(answers["off"], answers["on"]) is True
    assert restart._same_replies(answers["off"], {"shop-en": {"text": "45 days."}}) is False
    assert restart._same_replies({"shop-en": {"error": "handed over"}}, answers["on"]) is None
    run = {"ready_s": 12.5, "engine_s": 10.0, "warm_s": 2.5, "found_cached_tokens": 900, "fixed_tokens": 1000}
    table = restart.table({"on": run})
    assert "| on | 12.5 s | 10.0 s | 2.5 s | 900 of 1,000 |" in table
