"""The caching benchmark runs end to end (on the tiny model: figures, not speed, are checked)."""

import json
import os
import subprocess
import sys


def test_the_caching_benchmark_writes_both_modes(tmp_path, tiny_model_dir):
    out = tmp_path / "caching.json"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "PREFIXDESK_MODEL": str(tiny_model_dir),
        "PREFIXDESK_KV_CACHE_GIB": "1",
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "backend.cli",
            "bench",
            "--conversations",
            "3",
            "--max-tokens",
            "4",
            "--out",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| total time (s) |" in result.stdout
    figures = json.loads(out.read_text())
    on, off = figures["on"], figures["off"]
    assert on["conversations"] == off["conversations"] == 3
    assert on["total_s"] > 0 and off["qps"] > 0 and figures["speedup_total_time"] > 0
    assert off["cached_tokens"] == 0
    assert on["cached_tokens"] == on["shared_prefix_cacheable_tokens"]  # every prefix block hit
