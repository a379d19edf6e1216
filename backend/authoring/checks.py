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
import sys
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

import backend
from backend.authoring import cache_busters
from backend.authoring.problems import Problem
from backend.authoring.template_checks import chat_template_problems
from backend.config import get_settings
from backend.engine.kv_sizing import context_window, knowledge_budget
from backend.knowledge.articles import KnowledgeError, load_knowledge, render_article
from backend.prompting.assembler import PromptAssembler, cacheable_tokens
from backend.prompting.chat_format import ChatFormat, ChatTemplateError
from backend.prompting.definitions import (
    EXAMPLES_FILE,
    KNOWLEDGE_FOLDER,
    REQUIRED_FILES,
    SLUG,
    BotDefinitionError,
    bot_folders,
    load_bot,
    load_worked_examples,
    template_environment,
)

FIXED_FILES = ("system.j2", "policy.md", "examples.toml", "knowledge", "bot.toml")
POLICY_STANDIN = "(policy.md)"  # system.j2 is scanned on its own; policy.md separately
HASH_SEEDS = ("1", "2")
TYPICAL_QUESTIONS = {
    "en": "How many days do I have to return an item?",
    "zh": "买的冰箱不想要了，可以退货吗？",
}


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


def check_prompts(prompts_dir: Path, model_dir: Path, block_size: int) -> CheckResult:
    """Render every bot in fresh processes, as the server does at start-up, and check it."""
    if not prompts_dir.is_dir():
        raise CheckError(f"no prompts directory at {prompts_dir}")
    folders = bot_folders(prompts_dir)
    if not folders:
        raise CheckError(f"no bots in {prompts_dir}")
    processes = [_start_render_process(prompts_dir, model_dir, seed) for seed in HASH_SEEDS]
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


Rendered = dict[str, Any]  # JSON as one render process prints it


def load_tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


def render_bots(prompts_dir: Path, tokenizer: Any, knowledge_budget: int | None = None) -> Rendered:
    """What this process renders, JSON-ready.

    The chat template's problems, and per bot its prefix ids, the length of a typical
    first turn and its fixed texts (or why it does not load).
    """
    model_problems = chat_template_problems(tokenizer)
    try:
        assembler: PromptAssembler | None = PromptAssembler(ChatFormat(tokenizer))
    except ChatTemplateError as error:
        model_problems.append(Problem("chat-template", "chat_template", str(error)))
        assembler = None
    bots = {
        folder.name: _render_bot(folder, assembler, knowledge_budget) for folder in bot_folders(prompts_dir)
    }
    return {"model_problems": [asdict(problem) for problem in model_problems], "bots": bots}


def _render_bot(folder: Path, assembler: PromptAssembler | None, knowledge_budget: int | None) -> Rendered:
    try:
        bot = load_bot(folder)
    except BotDefinitionError as error:
        return {"error": str(error)}
    rendered: Rendered = {"texts": render_fixed_texts(folder), "prefix_ids": [], "first_turn_tokens": 0}
    if assembler is not None:
        question = TYPICAL_QUESTIONS.get(bot.language, TYPICAL_QUESTIONS["en"])
        bot_prefix = assembler.bot_prefix(bot, knowledge_budget)
        prefix = list(bot_prefix.token_ids)
        note = bot.reference.note(question, get_settings().relevant_lines)
        first_turn = assembler.prompt_for_reply([*prefix, *assembler.user_message(question, note)])
        rendered.update(prefix_ids=prefix, first_turn_tokens=len(first_turn))
        if bot.knowledge:
            limit = bot.knowledge_settings.max_prefix_tokens
            rendered["knowledge"] = {
                "articles": len(bot.knowledge),
                "tokens": bot_prefix.knowledge_tokens,
                "budget": knowledge_budget if limit is None else limit,
                "in_prefix": bot_prefix.knowledge_in_prefix,
            }
    return rendered


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


def fixed_prefix_problems(folder: Path) -> list[Problem]:
    """Template variables and calls, dates, ids and whitespace in the fixed prefix's files."""
    try:
        meta = tomllib.loads((folder / "bot.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return []  # loading the bot reports it
    static = set(meta.get("vars", {}))
    # `examples` is reported on its own below.
    allowed = {"system.j2": static | {"policy", "examples", "articles"}, "policy.md": static}
    env = template_environment(folder)
    problems = []
    for name, names in allowed.items():
        try:
            assert env.loader is not None  # template_environment always sets one
            tree = env.parse(env.loader.get_source(env, name)[0])
        except jinja2.TemplateError:
            continue  # missing or not parsable: loading the bot reports it
        problems += _problems(name, cache_busters.template_findings(tree, names))
        undeclared = jinja2.meta.find_undeclared_variables(tree)
        if name == "system.j2" and (folder / KNOWLEDGE_FOLDER).is_dir() and "articles" not in undeclared:
            detail = "system.j2 does not render `articles`: the help center is not in the prefix"
            problems.append(Problem("articles-unused", KNOWLEDGE_FOLDER, detail))
        if name == "system.j2" and "examples" in undeclared:
            detail = (
                "system.j2 renders `examples`: worked examples (examples.toml) come as turns of "
                "the fixed prefix after the system prompt, and the template gets none"
            )
            problems.append(Problem("examples-in-system-prompt", "system.j2", detail))
    for name, text in render_fixed_texts(folder).items():
        problems += _problems(name, cache_busters.text_findings(text))
        problems += _problems(name, cache_busters.whitespace_findings(text))
    return sorted(problems, key=lambda problem: FIXED_FILES.index(problem.file))


def _problems(file: str, findings: list[cache_busters.Finding]) -> list[Problem]:
    return [Problem(kind, file, detail) for kind, detail in findings]


def render_fixed_texts(folder: Path) -> dict[str, str]:
    """The fixed prefix's texts file by file, rendered as the loader does; skips what fails."""
    texts: dict[str, str] = {}
    try:
        meta = tomllib.loads((folder / "bot.toml").read_text(encoding="utf-8"))
        texts["bot.toml"] = str(meta["greeting"]).strip()
        variables = dict(meta.get("vars", {}))
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return texts
    env = template_environment(folder)
    renders: dict[str, Callable[[], str]] = {
        "policy.md": lambda: env.get_template("policy.md").render(**variables),
        # Scanned on its own: policy.md and examples.toml are scanned separately.
        "system.j2": lambda: env.get_template("system.j2").render(
            **variables, policy=POLICY_STANDIN, articles=[]
        ),
    }
    if (folder / EXAMPLES_FILE).is_file():
        renders[EXAMPLES_FILE] = lambda: _examples_text(folder)
    if (folder / KNOWLEDGE_FOLDER).is_dir():
        renders[KNOWLEDGE_FOLDER] = lambda: "\n\n".join(
            map(render_article, load_knowledge(folder / KNOWLEDGE_FOLDER))
        )
    for name, render in renders.items():
        try:
            texts[name] = render().strip()
        except (jinja2.TemplateError, BotDefinitionError, KnowledgeError):
            continue  # loading the bot reports it
    return texts


def _examples_text(folder: Path) -> str:
    return "\n\n".join(f"{e.question}\n{e.answer}" for e in load_worked_examples(folder))


def _start_render_process(prompts_dir: Path, model_dir: Path, seed: str) -> subprocess.Popen[str]:
    package_root = str(Path(backend.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    return subprocess.Popen(  # noqa: S603 - this interpreter, this module, our own paths
        [sys.executable, "-m", "backend.authoring.checks", str(prompts_dir), str(model_dir)],
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


def _render_process_main(argv: list[str]) -> None:
    prompts_dir, model_dir = (Path(arg) for arg in argv)
    budget = server_knowledge_budget(model_dir)
    json.dump(render_bots(prompts_dir, load_tokenizer(model_dir), budget), sys.stdout)


def server_knowledge_budget(model_dir: Path) -> int:
    """What a help center may add to a fixed prefix, as the server works it out."""
    settings = get_settings()
    window = context_window(model_dir, settings.max_model_len)
    return knowledge_budget(window, settings.conversation_room_tokens)


if __name__ == "__main__":
    _render_process_main(sys.argv[1:])
