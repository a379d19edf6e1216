"""The routing benchmark's ways, its router commands and its table (the real router runs in
tests/e2e/processes/test_scale_out.py)."""

import pytest
from typer.testing import CliRunner

from backend.bench.routing import WAYS, table
from backend.cli import app
from backend.engine.local_router import router_command


def test_every_way_is_the_router_with_one_of_its_policies():
    assert set(WAYS.values()) == {"consistent_hash", "cache_aware", "kv_aware", "round_robin"}
    for policy in WAYS.values():
        command = router_command(["http://a:1", "http://b:1"], 9000, policy)
        assert command[command.index("--policy") + 1] == policy
        assert "--cb-failure-threshold" in command  # a lost replica's requests retried elsewhere


def test_kv_aware_reads_each_replicas_events_for_its_model():
    events = {"http://a:1": "tcp://127.0.0.1:7001", "http://b:1": "tcp://127.0.0.1:7002"}
    command = router_command(list(events), 9000, "kv_aware", kv_events=events, block_size=32, model="/m")
    sources = [command[i + 1] for i, flag in enumerate(command) if flag == "--kv-event-source"]
    assert sources == ["http://a:1=tcp://127.0.0.1:7001", "http://b:1=tcp://127.0.0.1:7002"]
    assert command[command.index("--kv-event-block-size") + 1] == "32"
    assert command[command.index("--kv-event-model") + 1] == "/m"


def test_an_unknown_router_policy_is_refused():
    with pytest.raises(ValueError, match="consistent_hash"):
        router_command(["http://a:1"], 9000, "sticky")


def test_the_table_has_a_row_per_way():
    run = {
        "qps": 2.5,
        "ttft_ms_p50": 800.4,
        "ttft_ms_p95": 1900.0,
        "cached_share_of_history": 0.672,
        "uncached_prompt_tokens": 1509,
        "requests_per_replica": [24, 24],
    }
    rows = table({"ways": {"router_consistent_hash": run, "router_round_robin": run}}).splitlines()
    assert (
        len(rows) == 4
        and rows[2] == "| router_consistent_hash | 2.50 | 800 / 1900 | 67.2% | 1,509 | 24 + 24 |"
    )


def test_routing_runs_on_its_own():
    result = CliRunner().invoke(app, ["bench", "--scenario", "routing", "--scenario", "article"])
    assert result.exit_code == 1 and "on its own" in result.output
