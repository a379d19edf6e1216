"""Bot definitions read from `prompts/<slug>/` and rendered with Jinja2."""

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from backend.prompting.handoff import HandoffRules

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
REQUIRED_FILES = ("bot.toml", "system.j2", "policy.md", "context.j2")


class BotDefinitionError(ValueError):
    """A bot folder is incomplete or one of its templates does not render."""


@dataclass(frozen=True)
class Bot:
    slug: str
    name: str
    language: str
    greeting: str
    system_prompt: str  # rendered, policy included: part of the fixed prefix
    context_template: jinja2.Template
    handoff: HandoffRules

    def render_context(self, context: dict[str, Any]) -> str:
        """Per-customer context; placed after the fixed prefix so the prefix stays shared."""
        try:
            return self.context_template.render(context=context).strip()
        except jinja2.TemplateError as error:
            raise BotDefinitionError(f"bot {self.slug!r}: context does not render: {error}") from error


def template_environment(folder: Path) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,  # plain text for the model, never HTML  # noqa: S701
    )


def load_bot(folder: Path) -> Bot:
    slug = folder.name
    if not SLUG.match(slug):
        raise BotDefinitionError(f"bot folder {folder}: name must match {SLUG.pattern}")
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise BotDefinitionError(f"bot {slug!r}: missing {', '.join(missing)} in {folder}")
    try:
        meta = tomllib.loads((folder / "bot.toml").read_text(encoding="utf-8"))
        variables = dict(meta.get("vars", {}))
        env = template_environment(folder)
        policy = env.get_template("policy.md").render(**variables).strip()
        system_prompt = env.get_template("system.j2").render(**variables, policy=policy).strip()
        context_template = env.get_template("context.j2")
        return Bot(
            slug=slug,
            name=meta["name"],
            language=meta.get("language", "en"),
            greeting=meta["greeting"].strip(),
            system_prompt=system_prompt,
            context_template=context_template,
            handoff=HandoffRules.from_config(meta.get("language", "en"), meta.get("handoff", {})),
        )
    except (KeyError, tomllib.TOMLDecodeError, jinja2.TemplateError) as error:
        raise BotDefinitionError(f"bot {slug!r}: {type(error).__name__}: {error}") from error


def bot_folders(prompts_dir: Path) -> list[Path]:
    return sorted(p for p in prompts_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def load_bots(prompts_dir: Path) -> dict[str, Bot]:
    bots = {folder.name: load_bot(folder) for folder in bot_folders(prompts_dir)}
    if not bots:
        raise BotDefinitionError(f"no bots in {prompts_dir}")
    return bots
