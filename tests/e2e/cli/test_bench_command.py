"""`prefixdesk bench` end to end on the tiny model: every scenario and way, tiny counts.

Figures, not speed, are checked: the JSON's shape, cached tokens that only caching gives, and
drafts that only speculative decoding gives. One engine per way and caching mode
(`--group-by-way`) keeps the caching scenarios to six engine loads; `speculative` then runs on
the bare engine alone, into the same file, and `knowledge` and `capacity` through the app (four
loads). The tiny model's context window is small, so the help-center bot is on the retrieval
path there: the mechanics and the JSON are checked, not the help center in the prefix.
"""

import importlib.util
import json
import os
import subprocess
import sys

from backend.bench.goals import targets


def bench(tiny_model_dir, *args: str, context: int = 2048) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "PREFIXDESK_KV_CACHE_GIB": "1",
        "PREFIXDESK_MAX_MODEL_LEN": str(context),
        "PREFIXDESK_MAX_NUM_BATCHED_TOKENS": str(context),
        # The tiny model's random weights answer yes/no questions arbitrarily (a handover
        # would end a conversation the bench means to go on); the app's serve processes in
        # the tests run the same way (tests/support.py, serve_env).
        "PREFIXDESK_MODEL_JUDGES": "false",
        # Its random words would fail the strict answer checks nearly every time, and a reply
        # replaced by its quoted lines is not what the model's cache holds: streamed as written.
        "PREFIXDESK_ANSWER_CHECKS": "off",
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    command = [sys.executable, "-m", "backend.cli", "bench", "--model", str(tiny_model_dir), *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_the_bench_command_runs_every_scenario_and_way(tmp_path, tiny_model_dir):
    out = tmp_path / "latest.json"
    scenarios = [
        arg for name in ("article", "random", "multiturn", "support") for arg in ("--scenario", name)
    ]
    result = bench(
        tiny_model_dir,
        *scenarios,
        "--requests",
        "3",
        "--conversations",
        "2",
        "--turns",
        "2",
        "--rates",
        "2",
        "--window",
        "2",
        "--max-tokens",
        "4",
        "--group-by-way",
        "--out",
        str(out),
    )
    assert "| total time (s) |" in result.stdout
    figures = json.loads(out.read_text())
    assert figures["meta"]["app_storage"] == "sqlite + in-process store"
    assert figures["meta"]["load_average_at_start"]
    for scenario in ("article", "random", "multiturn", "support"):
        for mode in ("on", "off"):
            assert figures[scenario][mode]["total_s"] > 0 and figures[scenario][mode]["qps"] > 0
    article = figures["article"]
    assert set(article["ways"]) == {"app", "engine", "peer"}
    assert article["app_qps"] > 0 and article["engine_qps"] > 0 and article["peer_qps"] > 0
    for way, modes in article["ways"].items():
        assert modes["on"]["requests"] == modes["off"]["requests"] == 3, way
        assert modes["off"]["cached_tokens"] == 0, way
        assert 0 < modes["on"]["cached_tokens"] <= modes["on"]["prompt_tokens"], way
        # Every full block of the bot's prefix hits, whichever way the request came (a block
        # after it may too: the note of policy lines before each question opens alike).
        assert modes["on"]["cached_tokens"] >= modes["on"]["cacheable_tokens"], way
        assert modes["on"]["peak_rss_mib"] > 0, way
    # The bare engine's time to a whole first sentence (or its end): what a checked word waits for.
    engine_on = article["ways"]["engine"]["on"]
    assert engine_on["ttft_ms_p50"] <= engine_on["first_sentence_ms_p50"] <= engine_on["latency_ms_p50"]
    assert article["app_shown_vs_engine_sentence"] > 0 and article["app_vs_engine_ttft"] > 0
    multiturn = figures["multiturn"]
    for way, modes in multiturn["ways"].items():
        assert modes["on"]["requests"] == 4, way
        assert modes["on"]["cached_share_of_cacheable"] >= 0.95, way
    assert figures["random"]["on"]["cacheable_tokens"] == 0
    assert figures["support"]["by_rate"][0]["rate"] == 2.0
    arrivals = figures["support"]["by_rate"][0]["on"]["costs"]  # per turn, at that rate
    assert arrivals["turns"] > 0 and arrivals["kinds"]["reply"]["requests"] > 0
    assert "Where a turn's time goes at 2 arrivals/s (app, caching on)" in result.stdout
    assert len(figures["targets"]) == len(targets({})) and "speculative" not in figures  # all listed
    if importlib.util.find_spec("matplotlib"):  # the `bench` extra
        for plot in ("on_vs_off.png", "ways.png", "latency_vs_rate.png"):
            assert (tmp_path / plot).stat().st_size > 0, plot
    else:
        assert "plots skipped" in result.stdout

    # Speculative decoding off vs on, added to the same file: the sections above are kept.
    result = bench(
        tiny_model_dir,
        *("--scenario", "speculative", "--way", "engine", "--requests", "3", "--rates", "2", "--window", "2"),
        *("--speculative-max-tokens", "24", "--out", str(out)),
    )
    assert "speculative decoding off vs on (engine, caching on)" in result.stdout
    merged = json.loads(out.read_text())
    assert merged["article"] == {**figures["article"], "meta": figures["meta"]}
    speculative = merged["speculative"]
    assert speculative["way"] == "engine"
    for mode in ("off", "on"):
        assert set(speculative[mode]) == {"c1", "c4", "c16", "c32", "article", "support"}
        for part, run in speculative[mode].items():
            assert run["tokens_per_s"] > 0 and run["latency_ms_p50"] > 0, (mode, part)
            # Caching is on. vLLM does not cache the drafts accepted in a reply's last step
            # (docs/benchmarks.md): a later turn may find up to one block fewer.
            lost = 0 if mode == "off" else 32 * run["requests"]
            assert run["cacheable_tokens"] - lost <= run["cached_tokens"] <= run["prompt_tokens"], (
                mode,
                part,
            )
        assert speculative[mode]["c32"]["requests"] == 64 and speculative[mode]["c1"]["requests"] == 8
    assert all(run["draft_tokens"] == 0 for run in speculative["off"].values())
    assert sum(run["draft_tokens"] for run in speculative["on"].values()) > 0
    assert 0 <= speculative["acceptance_rate"] <= 1
    assert all(0 <= share <= 1 for share in speculative["same_reply_share"].values())
    measured = {t["target"]: t["value"] for t in merged["targets"]}
    assert measured["speculative: tokens/s at 32 conversations, on / off"] > 0
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "speculative.png").stat().st_size > 0


def test_the_knowledge_and_capacity_scenarios(tmp_path, tiny_model_dir):
    out = tmp_path / "latest.json"
    out.write_text(json.dumps({"meta": {"run": "earlier"}, "targets": [], "article": {"kept": True}}))
    result = bench(
        tiny_model_dir,
        *("--scenario", "knowledge", "--scenario", "capacity", "--max-tokens", "4"),
        *("--knowledge-questions", "2", "--knowledge-concurrency", "2", "--knowledge-rounds", "1"),
        *("--knowledge-off-questions", "1", "--knowledge-off-concurrency", "2"),
        *("--retrieval-conversations", "2", "--retrieval-turns", "2"),
        *("--capacity-conversations", "2,3", "--capacity-returning", "1", "--capacity-turns", "1"),
        *("--capacity-message-chars", "600", "--capacity-max-tokens", "4", "--out", str(out)),
        context=4096,  # the first turn's articles and the second's fit
    )
    assert "### knowledge (tallybook-en" in result.stdout and "### capacity (shop-en" in result.stdout
    figures = json.loads(out.read_text())
    assert figures["article"] == {"kept": True, "meta": {"run": "earlier"}}
    knowledge = figures["knowledge"]
    assert knowledge["way"] == "app" and knowledge["bot"] == "tallybook-en"
    assert knowledge["prefix_tokens"] > 0 and knowledge["knowledge_in_prefix"] is False
    for mode, single in (("on", 2), ("off", 1)):
        run = knowledge[mode]
        assert run["requests"] == single and run["ttft_ms_p50"] > 0 and run["total_s"] > 0, mode
        assert set(run["by_concurrency"]) == {"1", "2"} and run["by_concurrency"]["2"]["requests"] == 2
    assert knowledge["off"]["cached_tokens"] == 0
    assert knowledge["on"]["cached_tokens"] >= knowledge["on"]["cacheable_tokens"] > 0
    assert knowledge["ttft_p50_off_vs_on"] > 0
    retrieval = knowledge["retrieval"]
    assert retrieval["conversations"] == 2 and retrieval["turns"] == 2
    assert retrieval["knowledge_in_prefix"] is False
    assert retrieval["later_turns_cacheable_tokens"] > 0 and retrieval["later_turns_cached_share"] >= 0.9
    ways = figures["capacity"]["ways"]
    assert set(ways) == {"off", "on"}  # a run with the KV tier and one without
    for tier, capacity in ways.items():
        assert capacity["kv_tier"] == tier
        assert [row["conversations"] for row in capacity["levels"]] == [2, 3]
        for row in capacity["levels"]:
            assert row["returning"] == 1 and row["cacheable_tokens"] > 0 and row["ttft_ms_p50"] > 0
            assert row["hit_rate"] >= 0.9  # a 1 GiB cache holds the tiny model's few conversations
        assert capacity["kv_cache_gib"] == 1.0 and capacity["kv_cache_tokens"] > 0
        assert "KV cache:" in capacity["startup_sizing"]
        assert capacity["kv_tokens_per_conversation"] > 0 and capacity["fall_off_at"] is None
    # The cache alone never let go here: the tier is read at the most conversations measured.
    tier = figures["capacity"]["tier"]
    assert tier["off_fall_off_at"] is None and tier["twice_the_fall_off_reached"] is False
    assert tier["at_conversations"] == 3 and tier["ttft_vs_warm"] > 0
    measured = {t["target"]: t["value"] for t in figures["targets"]}
    assert measured["knowledge: retrieval path, cached / cacheable tokens of later turns"] >= 0.9
    assert measured["knowledge: TTFT p50 single-stream, caching on (ms)"] > 0
    if importlib.util.find_spec("matplotlib"):
        for plot in ("knowledge.png", "capacity.png"):
            assert (tmp_path / plot).stat().st_size > 0, plot


def test_the_restart_scenario_starts_the_app_warm_from_the_kv_tier(tmp_path, tiny_model_dir):
    # The app as served, started twice on one tier directory: the second start reads every
    # bot's fixed prompts from the files the first wrote.
    out = tmp_path / "latest.json"
    result = bench(tiny_model_dir, "--scenario", "restart", "--way", "on", "--out", str(out))
    assert "| on |" in result.stdout
    on = json.loads(out.read_text())["restart"]["on"]
    first = on["first_start"]
    assert first["found_cached_tokens"] == 0 and first["tier_files"] > 0 and first["tier_bytes"] > 0
    assert on["fixed_tokens"] == first["fixed_tokens"] > 0 and set(on["bots"]) == set(first["bots"])
    for slug, bot in on["bots"].items():  # every full block found; a prompt's last part block is computed
        assert 0.5 * bot["fixed_tokens"] <= bot["found_cached"] < bot["fixed_tokens"], slug
    assert 0 < on["engine_s"] <= on["ready_s"]
    for slug, answer in on["answers"].items():  # the tiny model's words are random, maybe none
        assert "error" not in answer and answer["cached_tokens"] > 0, slug
