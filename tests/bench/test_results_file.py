"""The results file keeps earlier sections, but reads its targets only from this code's runs."""

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from backend.bench import results_file
from backend.bench.results_file import code_version, machine, with_earlier_sections, write_section

NOW = {"commit": "c" * 40, "dirty": False}


def run(code: dict, started: str, **sections) -> dict:
    return {"meta": {"code": code, "started_at": started}, "targets": [], **sections}


def test_targets_read_only_sections_of_this_commit_and_the_rest_are_listed_stale(tmp_path):
    path = tmp_path / "latest.json"
    old = {"commit": "a" * 40, "dirty": False}
    earlier = run(old, "2026-11-29T10:00:00", article={"app_vs_engine_qps": 0.959}, random={"x": 1})
    earlier["multiturn"] = {"meta": {"code": NOW, "started_at": "2026-12-04T09:00:00"}, "ways": {}}
    path.write_text(json.dumps(earlier))

    out = with_earlier_sections(
        run(NOW, "2026-12-04T10:00:00", random={"caching_cost_total_time": 0.01}), path
    )

    assert out["random"] == {"caching_cost_total_time": 0.01}  # this run's
    assert out["article"]["app_vs_engine_qps"] == 0.959  # kept, with the meta of its run
    article = {"section": "article", "commit": "a" * 40, "started_at": "2026-11-29T10:00:00", "cpu": None}
    assert out["stale"] == [article]
    qps = next(t for t in out["targets"] if t["target"].startswith("article: app QPS"))
    assert qps["value"] is None  # a stale section is no evidence for a target
    share = next(t for t in out["targets"] if t["target"].startswith("random:"))
    assert share["value"] == 0.01


def test_a_scenario_run_alone_lists_the_full_runs_sections_with_the_commit_they_ran_on(tmp_path, monkeypatch):
    path = tmp_path / "latest.json"
    full_run = {"commit": "a" * 40, "dirty": False}
    path.write_text(json.dumps(run(full_run, "2026-12-05T11:00:00", article={"app_vs_engine_qps": 0.9})))
    monkeypatch.setattr(results_file, "code_version", lambda: NOW)
    write_section("restart", {"on": {"ready_s": 28.0}}, datetime(2026, 12, 6, tzinfo=UTC), path)
    written = json.loads(path.read_text())
    article = {"section": "article", "commit": "a" * 40, "started_at": "2026-12-05T11:00:00", "cpu": None}
    assert written["stale"] == [article]
    assert written["restart"]["meta"]["code"] == NOW
    ready = next(t for t in written["targets"] if t["target"] == "restart: seconds to ready, KV tier on")
    assert ready["value"] == 28.0


def test_a_run_with_uncommitted_changes_makes_no_kept_section_fresh(tmp_path):
    path = tmp_path / "latest.json"
    path.write_text(json.dumps(run(NOW, "2026-12-04T09:00:00", article={"app_vs_engine_qps": 0.9})))
    dirty = {**NOW, "dirty": True}
    kept = with_earlier_sections(run(dirty, "2026-12-04T10:00:00"), path)
    assert kept["stale"] == []  # the kept section ran on the committed code itself
    path.write_text(json.dumps(run(dirty, "2026-12-04T09:00:00", article={"app_vs_engine_qps": 0.9})))
    assert [s["section"] for s in with_earlier_sections(run(NOW, "2026-12-04T10:00:00"), path)["stale"]] == [
        "article"
    ]


def test_a_section_of_the_same_code_on_a_machine_of_other_speed_features_is_stale(tmp_path):
    path = tmp_path / "latest.json"
    amx = {"cpu": "Intel(R) Xeon(R) Processor", "cpu_features": ["avx2", "avx512f", "amx_bf16"], "cores": 2}
    avx2 = {"cpu": "AMD EPYC", "cpu_features": ["avx2"], "cores": 2}
    earlier = run(NOW, "2026-12-06T04:00:00", capacity={"x": 1})
    earlier["meta"]["machine"] = amx
    earlier["restart"] = {"meta": {"code": NOW, "started_at": "2026-12-06T05:00:00", "machine": avx2}}
    path.write_text(json.dumps(earlier))

    now = run(NOW, "2026-12-06T07:00:00", support={"x": 2})
    now["meta"]["machine"] = avx2
    out = with_earlier_sections(now, path)

    capacity = {"section": "capacity", "commit": NOW["commit"], "started_at": "2026-12-06T04:00:00"}
    # restart ran on this code and a machine like this one: fresh.
    assert out["stale"] == [{**capacity, "cpu": "Intel(R) Xeon(R) Processor"}]


def _repo(path: Path) -> Callable[..., None]:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)  # noqa: S603, S607

    (path / "bench" / "results").mkdir(parents=True)
    (path / "bench" / "results" / "latest.json").write_text("{}")
    (path / "docs").mkdir()
    (path / "docs" / "benchmarks.md").write_text("# Benchmarks\n")
    (path / "backend.py").write_text("A = 1\n")
    (path / "tests").mkdir()
    (path / "tests" / "test_backend.py").write_text("")
    git("init", "-q")
    commit_all(git, "code")
    return git


def commit_all(git: Callable[..., None], message: str) -> None:
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message)


def test_results_files_written_since_the_commit_leave_the_code_clean_and_code_changes_do_not(tmp_path):
    _repo(tmp_path)
    (tmp_path / "bench" / "results" / "latest.json").write_text('{"article": {}}')  # an earlier run's section
    (tmp_path / "docs" / "benchmarks.md").write_text("# Benchmarks\n\nA figure.\n")
    (tmp_path / "tests" / "test_backend.py").write_text("assert True\n")  # the benchmark never runs it
    assert code_version(tmp_path)["dirty"] is False
    (tmp_path / "backend.py").write_text("A = 2\n")
    assert code_version(tmp_path)["dirty"] is True


def test_a_section_stays_fresh_across_commits_of_results_and_docs_but_not_of_code(tmp_path, monkeypatch):
    git = _repo(tmp_path)
    measured = code_version(tmp_path)
    path = tmp_path / "bench" / "results" / "latest.json"
    path.write_text(json.dumps(run(measured, "2026-12-06T04:00:00", capacity={"ways": {}})))
    (tmp_path / "docs" / "benchmarks.md").write_text("# Benchmarks\n\nCapacity, measured.\n")
    commit_all(git, "capacity's results")
    after_results = code_version(tmp_path)
    assert after_results["commit"] != measured["commit"]
    assert after_results["source"] == measured["source"]

    monkeypatch.setattr(results_file, "code_version", lambda: after_results)
    write_section("restart", {"on": {"ready_s": 28.0}}, datetime(2026, 12, 6, tzinfo=UTC), path)
    assert json.loads(path.read_text())["stale"] == []

    (tmp_path / "backend.py").write_text("A = 2\n")
    commit_all(git, "a change of code")
    monkeypatch.setattr(results_file, "code_version", lambda: code_version(tmp_path))
    write_section("restart", {"on": {"ready_s": 29.0}}, datetime(2026, 12, 6, tzinfo=UTC), path)
    assert [s["section"] for s in json.loads(path.read_text())["stale"]] == ["capacity"]


def test_the_machine_names_the_cpu_features_that_set_its_speed():
    features = machine()["cpu_features"]
    flags = set(Path("/proc/cpuinfo").read_text().split())
    assert features == [name for name in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if name in flags]
