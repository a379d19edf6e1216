"""Bot definitions read from `prompts/<slug>/` and rendered with Jinja2."""

import re
import shutil
import tomllib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from backend.knowledge.articles import Knowledge, KnowledgeError, load_knowledge
from backend.languages import in_language_or_english
from backend.prompting.answers import AnswerChecks, AnswersError, load_answer_checks
from backend.prompting.judge_prompts import JudgePrompt, judge_file, judge_switches, load_judge_prompts
from backend.prompting.office_hours import OfficeHours, OfficeHoursError, parse_office_hours
from backend.prompting.openings import Openings, OpeningsError, SecondTry, load_second_try
from backend.prompting.quoting import Quoting, QuotingError, load_quoting
from backend.prompting.reference import PolicyLines

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
REQUIRED_FILES = ("bot.toml", "system.j2", "policy.md", "context.j2")
EXAMPLES_FILE = "examples.toml"  # optional worked examples: turns of the fixed prefix
KNOWLEDGE_FOLDER = "knowledge"  # optional help center, rendered by system.j2 as `articles`
DEFAULT_ARTICLES_PER_QUESTION = 2


class BotDefinitionError(ValueError):
    """A bot folder is incomplete or one of its templates does not render."""


@dataclass(frozen=True)
class HandoffSettings:
    message: str  # what the bot says when it hands over
    max_unanswered: int  # hand over after this many replies in a row that did not answer
    on_doubt: bool  # hand over when a reply is flagged as doubtful


@dataclass(frozen=True)
class WorkedExample:
    question: str
    answer: str


@dataclass(frozen=True)
class KnowledgeSettings:
    # Most tokens its articles may add to the fixed prefix; None: what the context window leaves
    # (the registry decides). Beyond it, the articles that match each question come beside it.
    max_prefix_tokens: int | None
    articles_per_question: int  # articles brought beside a question when they are not in the prefix


@dataclass(frozen=True)
class Bot:
    slug: str
    name: str
    language: str
    greeting: str
    system_prompt: str  # rendered, policy included: part of the fixed prefix
    context_template: jinja2.Template
    handoff: HandoffSettings
    judges: dict[str, JudgePrompt]  # the yes/no questions asked about its conversations (those on)
    reference: PolicyLines  # its policy's lines, to repeat those that match a message beside it
    # Customer and bot turns of the fixed prefix, after the system prompt: the small default
    # model follows a conversation it was shown better than examples quoted in the system
    # prompt (docs/quality.md, worked examples).
    examples: tuple[WorkedExample, ...] = ()
    office_hours: OfficeHours | None = None  # when its team is there; None: always (never in the prompt)
    knowledge: Knowledge = Knowledge()  # its help center's articles, in canonical order
    # The system prompt without the articles, for when they do not fit in the fixed prefix.
    lean_system_prompt: str = ""
    knowledge_settings: KnowledgeSettings = KnowledgeSettings(None, DEFAULT_ARTICLES_PER_QUESTION)
    # What it does when a reply opens with a yes or no the policy does not give (None: its
    # opening judge is off).
    second_try: SecondTry | None = None
    # How it quotes a policy line that answers when a reply starts by saying it does not know
    # (None: its line_answers judge is off).
    quoting: Quoting | None = None
    answers: AnswerChecks = AnswerChecks()  # how its replies are checked before they are shown
    # How a reply the checks doubt is replaced: the best lines quoted, with the offer of a person.
    fallback: Quoting | None = None
    yes_no: Openings | None = None  # the words a plain yes or no opens with, in its language

    def fixed_texts(self) -> tuple[str, ...]:
        """Everything the fixed prefix says, in its order, as text."""
        said = (text for example in self.examples for text in (example.question, example.answer))
        return (self.system_prompt, *said, self.greeting)

    def lines_to_quote(self, question: str) -> list[str]:
        """The source lines quoted in place of a reply not shown, best for the question first
        by meaning (`PolicyLines.shown`); ranking may encode the question: call off the loop."""
        return self.reference.shown(question, self.answers.quote_lines)

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


DEFAULT_HANDOFF_MESSAGES = {
    "en": "I'm passing you to a colleague from our support team; they will reply here shortly.",
    "zh": "正在为您转接人工客服，请稍候。",
    "es": "Le paso con un compañero de nuestro equipo de atención al cliente; le responderá aquí en breve.",
    "fr": "Je vous transfère à notre équipe d'assistance ; un conseiller vous répondra ici très bientôt.",
    "de": "Ich leite Sie an unser Support-Team weiter; jemand aus dem Team antwortet Ihnen hier in Kürze.",
    "pt": "Vou transferir você para a nossa equipe de atendimento; um colega responderá aqui em breve.",
    "it": "La metto in contatto con un collega del nostro team di assistenza; Le risponderà qui a breve.",
}


def load_bot(folder: Path) -> Bot:
    slug = folder.name
    if not SLUG.match(slug):
        raise BotDefinitionError(f"bot folder {folder}: name must match {SLUG.pattern}")
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise BotDefinitionError(f"bot {slug!r}: missing {', '.join(missing)} in {folder}")
    try:
        return _read_bot(folder)
    except (OfficeHoursError, KnowledgeError, OpeningsError, QuotingError, AnswersError) as error:
        raise BotDefinitionError(str(error)) from error
    except (KeyError, ValueError, tomllib.TOMLDecodeError, jinja2.TemplateError) as error:
        raise BotDefinitionError(f"bot {slug!r}: {type(error).__name__}: {error}") from error


def _read_bot(folder: Path) -> Bot:
    """The bot in a complete folder; its files are read, and fail, in this order."""
    slug = folder.name
    source = (folder / "bot.toml").read_text(encoding="utf-8")
    meta = tomllib.loads(source)
    language = meta.get("language", "en")
    variables = dict(meta.get("vars", {}))
    examples = load_worked_examples(folder)
    knowledge = load_knowledge(folder / KNOWLEDGE_FOLDER)
    env = template_environment(folder)
    policy = env.get_template("policy.md").render(**variables).strip()
    system_prompt, lean_system_prompt = _system_prompts(
        folder, env, {**variables, "policy": policy}, knowledge
    )
    context_template = env.get_template("context.j2")
    reference = meta.get("reference", {})
    handoff = meta.get("handoff", {})
    switches = judge_switches(meta.get("judges", {}))
    judges = load_judge_prompts(folder, language, tuple(n for n, on in switches.items() if on))
    return Bot(
        slug=slug,
        name=meta["name"],
        language=language,
        greeting=meta["greeting"].strip(),
        system_prompt=system_prompt,
        context_template=context_template,
        handoff=handoff_settings(handoff, language),
        judges=judges,
        examples=examples,
        reference=PolicyLines.of(
            policy, language, reference.get("heading"), knowledge, reference.get("matching", "words")
        ),
        office_hours=(
            parse_office_hours(meta["office_hours"], slug, source) if "office_hours" in meta else None
        ),
        knowledge=knowledge,
        lean_system_prompt=lean_system_prompt,
        knowledge_settings=knowledge_settings(meta.get("knowledge", {})),
        second_try=(
            load_second_try(judges["opening"].source, language, meta.get("second_try", {}))
            if "opening" in judges
            else None
        ),
        quoting=(
            load_quoting(judges["line_answers"].source, language, with_help_center=bool(knowledge))
            if "line_answers" in judges
            else None
        ),
        answers=load_answer_checks(meta.get("answers", {}), folder / "bot.toml", source),
        fallback=load_quoting(judge_file("line_answers", folder), language, with_help_center=bool(knowledge)),
        yes_no=load_second_try(judge_file("opening", folder), language, {}).openings,
    )


def _system_prompts(
    folder: Path, env: jinja2.Environment, fixed: dict[str, Any], knowledge: Knowledge
) -> tuple[str, str]:
    """The system prompt with the help center's articles, and without them."""
    system = env.get_template("system.j2")
    system_prompt = system.render(**fixed, articles=knowledge.as_records()).strip()
    lean_system_prompt = system.render(**fixed, articles=[]).strip()
    if knowledge and system_prompt == lean_system_prompt:
        raise BotDefinitionError(
            f"bot {folder.name!r}: it has a help center in {folder / KNOWLEDGE_FOLDER}, but system.j2 "
            "does not render `articles` (see prompts/README.md)"
        )
    return system_prompt, lean_system_prompt


def handoff_settings(table: dict[str, Any], language: str) -> HandoffSettings:
    return HandoffSettings(
        message=table.get("message", in_language_or_english(DEFAULT_HANDOFF_MESSAGES, language)),
        max_unanswered=int(table.get("max_unanswered", 2)),
        on_doubt=bool(table.get("on_doubt", False)),
    )


def knowledge_settings(table: dict[str, Any]) -> KnowledgeSettings:
    unknown = set(table) - {"max_prefix_tokens", "articles_per_question"}
    if unknown:
        raise ValueError(f"[knowledge] has unknown keys: {', '.join(sorted(unknown))}")
    limit = table.get("max_prefix_tokens")
    per_question = int(table.get("articles_per_question", DEFAULT_ARTICLES_PER_QUESTION))
    if (limit is not None and int(limit) < 0) or per_question < 0:
        raise ValueError("[knowledge] max_prefix_tokens and articles_per_question must not be negative")
    return KnowledgeSettings(None if limit is None else int(limit), per_question)


def load_worked_examples(folder: Path) -> tuple[WorkedExample, ...]:
    path = folder / EXAMPLES_FILE
    if not path.is_file():
        return ()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise BotDefinitionError(f"{path}: {error}") from error
    examples = []
    for n, raw in enumerate(document.get("example", []), start=1):
        if not isinstance(raw, dict) or set(raw) != {"question", "answer"}:
            raise BotDefinitionError(
                f"{path}: [[example]] number {n} needs a question and an answer, nothing else"
            )
        examples.append(WorkedExample(str(raw["question"]).strip(), str(raw["answer"]).strip()))
    return tuple(examples)


def bot_folders(prompts_dir: Path) -> list[Path]:
    return sorted(p for p in prompts_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def copy_with_bots(prompts_dir: Path, target: Path, only: Collection[str]) -> Path:
    """A copy of `prompts_dir` at `target` with only these bots and everything they share
    (such as `_judges`)."""

    def left_out(folder: str, names: list[str]) -> set[str]:
        if Path(folder) != prompts_dir:
            return set()
        return {n for n in names if (prompts_dir / n / "bot.toml").is_file() and n not in only}

    shutil.copytree(prompts_dir, target, ignore=left_out)
    return target


def load_bots(prompts_dir: Path) -> dict[str, Bot]:
    bots = {folder.name: load_bot(folder) for folder in bot_folders(prompts_dir)}
    if not bots:
        raise BotDefinitionError(f"no bots in {prompts_dir}")
    return bots
