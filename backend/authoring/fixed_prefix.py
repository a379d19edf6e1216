"""The fixed prefix's files scanned for what would make it differ between conversations or edits:
template variables and calls, dates, ids and whitespace."""

import tomllib
from collections.abc import Callable
from pathlib import Path

import jinja2
import jinja2.meta

from backend.authoring import cache_busters
from backend.authoring.problems import Problem
from backend.knowledge.articles import KnowledgeError, load_knowledge, render_article
from backend.prompting.definitions import (
    EXAMPLES_FILE,
    KNOWLEDGE_FOLDER,
    BotDefinitionError,
    load_worked_examples,
    template_environment,
)

FIXED_FILES = ("system.j2", "policy.md", "examples.toml", "knowledge", "bot.toml")
POLICY_STANDIN = "(policy.md)"  # system.j2 is scanned on its own; policy.md separately


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
