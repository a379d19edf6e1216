"""`prefixdesk bench` end to end on the tiny model: every scenario and way, tiny counts.

Figures, not speed, are checked: the JSON's shape, and cached tokens that only caching gives.
One engine per way and caching mode (`--group-by-way`) keeps it to six engine loads.
"""

import importlib.util
import json
import os
import subprocess
import sys


def test_the_bench_command_runs_every_scenario_and_way(tmp_path, tiny_model_dir):
    out = tmp_path / "latest.json"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "PREFIXDESK_KV_CACHE_GIB": "1",
        "PREFIXDESK_MAX_MODEL_LEN": "2048",
        "PREFIXDESK_MAX_NUM_BATCHED_TOKENS": "2048",
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "backend.cli",
            "bench",
            "--model",
            str(tiny_model_dir),
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
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
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
        # Every full block of the bot's prefix hits, whichever way the request came.
        assert modes["on"]["cached_tokens"] == modes["on"]["cacheable_tokens"], way
        assert modes["on"]["peak_rss_mib"] > 0, way
    multiturn = figures["multiturn"]
    for way, modes in multiturn["ways"].items():
        assert modes["on"]["requests"] == 4, way
        assert modes["on"]["cached_share_of_cacheable"] >= 0.95, way
    assert figures["random"]["on"]["cacheable_tokens"] == 0
    assert figures["support"]["by_rate"][0]["rate"] == 2.0
    assert {t["target"] for t in figures["targets"]} and len(figures["targets"]) == 4
    if importlib.util.find_spec("matplotlib"):  # the `bench` extra
        for plot in ("on_vs_off.png", "ways.png", "latency_vs_rate.png"):
            assert (tmp_path / plot).stat().st_size > 0, plot
    else:
        assert "plots skipped" in result.stdout
