"""`prefixdesk bench`: plan the runs, start one process for each, and report.

Each (scenario, way, caching mode) runs in a process of its own, so no run inherits another's
cache or memory. `group_by_way` runs all scenarios of one way and mode in one process instead
(fewer engine loads: for quick checks, not for figures).
"""

import os
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from backend.bench import plots, report, results_file
from backend.bench.caching_results import scenario_results
from backend.bench.capacity import CapacityPlan
from backend.bench.capacity_results import capacity_results
from backend.bench.goals import targets
from backend.bench.knowledge_results import knowledge_results
from backend.bench.options import BenchOptions
from backend.bench.processes import run_worker, spec_mode
from backend.bench.speculative_results import speculative_results
from backend.bench.workloads import BOT
from backend.config import Settings

WAYS = ("app", "engine", "peer")
# `random` has no bot prefix, which the app always puts first; `support` is the product's traffic.
SCENARIO_WAYS = {
    "article": WAYS,
    "random": ("engine",),
    "multiturn": WAYS,
    "support": ("app",),
    "speculative": ("engine", "app"),
    "knowledge": ("app",),
    "capacity": ("app",),
}
# `speculative` compares speculative decoding off and on, caching on, in runs of its own.
SPECULATIVE = "speculative"
# Scenarios whose runs set up the app their own way, so never share a process with others.
KNOWLEDGE, CAPACITY = "knowledge", "capacity"
OWN_RUNS = (SPECULATIVE, KNOWLEDGE, CAPACITY)


def plan(options: BenchOptions) -> list[dict]:
    """Worker specs, caching off and on next to each other so both see the same machine."""
    selection = options.selection
    units: list[tuple[str, list[str]]] = []
    for scenario in selection.scenarios:
        if scenario in OWN_RUNS:
            continue
        for way in SCENARIO_WAYS[scenario]:
            if way not in selection.ways:
                continue
            grouped = next((u for u in units if u[0] == way), None) if selection.group_by_way else None
            if grouped:
                grouped[1].append(scenario)
            else:
                units.append((way, [scenario]))
    common = options.load.as_spec()
    specs = [
        {"way": way, "scenarios": scenarios, "caching": caching, **common}
        for way, scenarios in units
        for caching in selection.caching
    ]
    if SPECULATIVE in selection.scenarios:
        specs += [
            {
                "way": way,
                "scenarios": [SPECULATIVE],
                "caching": True,
                "speculation": speculation,
                **common,
                "max_tokens": options.speculative_max_tokens,
            }
            for way in SCENARIO_WAYS[SPECULATIVE]
            if way in selection.ways
            for speculation in (False, True)
        ]
    if "app" in selection.ways:
        specs += knowledge_specs(options, common) + capacity_specs(options, common)
    return specs


def knowledge_specs(options: BenchOptions, common: dict) -> list[dict]:
    """The help-center bot with caching off and on (its whole help center in the prefix when the
    context window allows), then on the retrieval path with caching on."""
    selection, knowledge = options.selection, options.knowledge
    if KNOWLEDGE not in selection.scenarios:
        return []
    spec = knowledge.as_spec()
    specs = [
        {
            "way": "app",
            "scenarios": [KNOWLEDGE],
            "caching": caching,
            **common,
            "knowledge": spec,
            # With caching off a warmed prefix is never reused: no start-up prefill of the help center.
            "app_env": {} if caching else {"PREFIXDESK_WARMUP_ON_START": "false"},
        }
        for caching in selection.caching
    ]
    if True in selection.caching and knowledge.retrieval_conversations and knowledge.retrieval_turns:
        specs.append(
            {
                "way": "app",
                "scenarios": [KNOWLEDGE],
                "caching": True,
                "knowledge_path": "retrieval",
                **common,
                "knowledge": spec,
            }
        )
    return specs


def capacity_specs(options: BenchOptions, common: dict) -> list[dict]:
    """Caching on only (off, nothing comes back from the cache), the `shop-en` bot alone, so that
    the cache holds its prefix and its conversations; a run per KV tier setting (off, on)."""
    if CAPACITY not in options.selection.scenarios or True not in options.selection.caching:
        return []
    return [
        {
            "way": "app",
            "scenarios": [CAPACITY],
            "caching": True,
            **common,
            "max_tokens": options.capacity.max_tokens,
            "kv_cache_gib": options.capacity.kv_gib,
            "kv_tier": tier,
            "bots": [BOT],
            "capacity": options.capacity.as_spec(),
        }
        for tier in options.capacity.tiers
    ]


def run_bench(options: BenchOptions, settings: Settings, *, echo: Callable[[str], None] = print) -> dict:
    """Every planned run, then the scenarios' sections, the targets and the tables; the results
    file keeps the sections of scenarios not run this time."""
    capacity = options.capacity
    if CAPACITY in options.selection.scenarios:  # a bad list fails here, not after the other runs
        CapacityPlan(capacity.conversations, capacity.returning)
    specs = plan(options)
    started_at = datetime.now(UTC)
    load_avg = os.getloadavg()
    results = _run_all(specs, load_avg[0], echo)
    scenarios = _sections(options.selection.scenarios, results)
    measured_targets = targets(scenarios)
    out = {
        "meta": results_file.meta(options, settings, results, started_at, load_avg),
        "targets": measured_targets,
        **scenarios,
    }
    out = results_file.with_earlier_sections(out, options.out)
    echo(report.text_report(scenarios, out["targets"], out["stale"]))
    results_file.write(out, options.out)
    echo(f"written: {options.out}")
    try:
        for path in plots.write_all(scenarios, options.plots_dir or options.out.parent):
            echo(f"written: {path}")
    except ImportError:
        echo("plots skipped: matplotlib is not installed (pip install -e '.[bench]')")
    return out


def _run_all(specs: list[dict], load_avg_1m: float, echo: Callable[[str], None]) -> list[dict]:
    folder = Path(tempfile.mkdtemp(prefix="prefixdesk-bench-"))
    echo(f"{len(specs)} runs; logs in {folder}; load average at start {load_avg_1m:.2f}")
    results = []
    for index, spec in enumerate(specs, 1):
        label = f"[{index}/{len(specs)}] {spec['way']:<6} {spec_mode(spec).replace('-', ' ')}"
        echo(f"{label} {', '.join(spec['scenarios'])} ...")
        began = time.perf_counter()
        results.append(run_worker(spec, folder, index))
        echo(f"{label} done in {time.perf_counter() - began:.0f} s")
    return results


def _sections(names: tuple[str, ...], results: list[dict]) -> dict:
    """Each scenario's section of the results, from the outputs of the runs that measured it."""
    scenarios = {
        name: scenario_results(name, [r for r in results if name in _scenarios_of(r)])
        for name in names
        if name not in OWN_RUNS and any(name in _scenarios_of(r) for r in results)
    }
    speculative = [r for r in results if r.get("speculation") is not None]
    if speculative:
        scenarios[SPECULATIVE] = speculative_results(speculative)
    for name, summarize in ((KNOWLEDGE, knowledge_results), (CAPACITY, capacity_results)):
        found = [r for r in results if name in _scenarios_of(r)]
        if found:
            scenarios[name] = summarize(found)
    return scenarios


def _scenarios_of(result: dict) -> set[str]:
    return {run["scenario"] for run in result["runs"]}
