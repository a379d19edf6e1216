"""`prefixdesk prompts check`: is every bot's fixed prefix the same tokens every time?

Each bot is rendered as the engine sees it (bot folder, chat template, tokenizer), in two
fresh processes with different hash seeds, as a server would at start-up: the renders
must be equal, and give how much of a first turn the prefix cache can serve. The fixed
prefix's files are scanned for what would make it differ between conversations or edits.
"""

import itertools
import json
import os
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

import backend
from backend.authoring.fixed_prefix import FIXED_FILES, fixed_prefix_problems, render_fixed_texts
from backend.authoring.problems import Problem
from backend.authoring.rendering import Rendered, RenderSettings, render_process_command
from backend.prompting.assembler import cacheable_tokens
from backend.prompting.definitions import REQUIRED_FILES, SLUG, bot_folders

HASH_SEEDS = ("1", "2")


class CheckError(RuntimeError):
    """The check itself could not run (not a problem found in a bot)."""


@dataclass(frozen=True)
class CacheUsage:
    prefix_tokens: int
    prefix_cached: int  # full blocks of the prefix: cached at warm-up, reused by every turn
    first_turn_tokens: int  # prefix + a typical question (with its policy lines) + generation prompt
    first_turn_cached: int  # what a first turn can be served from cache at most
    knowledge: "KnowledgeUsage | None" = None  # its help center, if it has one

    @property
    def first_turn_share(self) -> float:
        return self.first_turn_cached / self.first_turn_tokens


@dataclass(frozen=True)
class KnowledgeUsage:
    articles: int
    tokens: int  # what the articles add to the fixed prefix
    budget: int | None  # the most they may add (bot.toml, else the context window's room)
    in_prefix: bool  # False: too long, so the articles that match a question come beside it


@dataclass
class BotReport:
    slug: str
    usage: CacheUsage | None  # None when the bot or the chat template cannot be rendered
    problems: list[Problem] = field(default_factory=list)


@dataclass
class CheckResult:
    bots: list[BotReport]
    model_problems: list[Problem]  # the chat template, shared by all bots

    @property
    def ok(self) -> bool:
        return not self.model_problems and not any(report.problems for report in self.bots)


def check_prompts(
    prompts_dir: Path, model_dir: Path, block_size: int, render_settings: RenderSettings
) -> CheckResult:
    """Render every bot in fresh processes, as the server does at start-up, and check it."""
    if not prompts_dir.is_dir():
        raise CheckError(f"no prompts directory at {prompts_dir}")
    folders = bot_folders(prompts_dir)
    if not folders:
        raise CheckError(f"no bots in {prompts_dir}")
    command = render_process_command(prompts_dir, model_dir, render_settings)
    processes = [_start_render_process(command, seed) for seed in HASH_SEEDS]
    try:
        static = {folder.name: fixed_prefix_problems(folder) for folder in folders}
        renders = {
            f"PYTHONHASHSEED={seed}": _collect(p) for seed, p in zip(HASH_SEEDS, processes, strict=True)
        }
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    first = next(iter(renders.values()))  # the table's numbers; every render must be equal
    reports = []
    for folder in folders:
        report = BotReport(folder.name, usage=None, problems=static[folder.name])
        rendered = first["bots"][folder.name]
        if "error" in rendered:
            report.problems.append(Problem("load-error", _failing_file(folder), rendered["error"]))
        elif rendered["prefix_ids"]:
            report.usage = cache_usage(len(rendered["prefix_ids"]), rendered["first_turn_tokens"], block_size)
            if rendered.get("knowledge"):
                report.usage = replace(report.usage, knowledge=KnowledgeUsage(**rendered["knowledge"]))
        report.problems.extend(unstable_render_problems(folder.name, renders))
        reports.append(report)
    return CheckResult(reports, [Problem(**problem) for problem in first["model_problems"]])


def _failing_file(folder: Path) -> str:
    if not SLUG.match(folder.name):
        return "(folder name)"
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    rendered = render_fixed_texts(folder)
    failing = missing + [name for name in ("bot.toml", "policy.md", "system.j2") if name not in rendered]
    return failing[0] if failing else "context.j2"


def cache_usage(prefix_tokens: int, first_turn_tokens: int, block_size: int) -> CacheUsage:
    # The warm-up computes the whole prefix, so each block it fills completely is cached;
    # a prompt that continues past the prefix reuses all of them (floor, not
    # cacheable_tokens, whose "last token is computed" rule is about a prompt's own end).
    prefix_cached = prefix_tokens // block_size * block_size
    first_turn_cached = min(prefix_cached, cacheable_tokens(first_turn_tokens, block_size))
    return CacheUsage(prefix_tokens, prefix_cached, first_turn_tokens, first_turn_cached)


def _start_render_process(command: list[str], seed: str) -> subprocess.Popen[str]:
    package_root = str(Path(backend.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    return subprocess.Popen(  # noqa: S603 - this interpreter, this module, our own paths
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": path},
    )


def _collect(process: subprocess.Popen[str]) -> Rendered:
    try:
        stdout, stderr = process.communicate(timeout=600)
    except subprocess.TimeoutExpired as error:
        raise CheckError("rendering the bots in a fresh process took over 10 minutes") from error
    if process.returncode != 0:
        raise CheckError(f"rendering the bots in a fresh process failed:\n{stderr[-2000:]}")
    rendered: Rendered = json.loads(stdout)
    return rendered


def unstable_render_problems(slug: str, renders: dict[str, Rendered]) -> list[Problem]:
    """A bot rendered in processes with different hash seeds must give the same tokens."""
    bots = [(where, render["bots"][slug]) for where, render in renders.items()]
    loaded = [(where, bot) for where, bot in bots if "error" not in bot]
    for (first_where, first), (where, other) in itertools.pairwise(loaded):
        if other == first:
            continue
        file = next((f for f in FIXED_FILES if first["texts"].get(f) != other["texts"].get(f)), None)
        if file is None:
            detail = f"the prefix token ids differ between {first_where} and {where}"
            return [Problem("unstable-render", "chat_template", detail)]
        a, b = first["texts"][file], other["texts"][file]
        start = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        detail = (
            f"renders differently with {first_where} and {where} (set or dict order? randomness?): "
            f"{a[start : start + 40]!r} vs {b[start : start + 40]!r}"
        )
        return [Problem("unstable-render", file, detail)]
    return []
