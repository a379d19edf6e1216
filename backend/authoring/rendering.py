"""What one process renders of the bots, as the server would at start-up: the chat template's
problems and, per bot, its prefix ids, a typical first turn's length and its fixed texts.

`prefixdesk prompts check` runs this module in fresh processes (`python -m`) and compares
their output; the settings it needs come on the command line, as JSON.
"""

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from backend.authoring.fixed_prefix import render_fixed_texts
from backend.authoring.problems import Problem
from backend.authoring.template_checks import chat_template_problems
from backend.config import Settings
from backend.engine import kv_sizing
from backend.languages import in_language_or_english
from backend.prompting.assembler import PromptAssembler
from backend.prompting.chat_format import ChatFormat, ChatTemplateError
from backend.prompting.definitions import BotDefinitionError, bot_folders, load_bot

TYPICAL_QUESTIONS = {
    "en": "How many days do I have to return an item?",
    "zh": "买的冰箱不想要了，可以退货吗？",
    "es": "¿Cuántos días tengo para devolver un artículo?",
    "fr": "Combien de jours ai-je pour retourner un article ?",
    "de": "Wie viele Tage habe ich Zeit, einen Artikel zurückzugeben?",
    "pt": "Quantos dias tenho para devolver um produto?",
    "it": "Quanti giorni ho per restituire un articolo?",
}

Rendered = dict[str, Any]  # JSON as one render process prints it


@dataclass(frozen=True)
class RenderSettings:
    """The settings a bot's render depends on, as the server has them."""

    relevant_lines: int  # policy lines repeated beside a typical question
    max_model_len: int | None
    conversation_room_tokens: int

    @classmethod
    def of(cls, settings: Settings) -> "RenderSettings":
        return cls(settings.relevant_lines, settings.max_model_len, settings.conversation_room_tokens)

    def knowledge_budget(self, model_dir: Path) -> int:
        """What a help center may add to a fixed prefix, as the server works it out."""
        window = kv_sizing.context_window(model_dir, self.max_model_len)
        return kv_sizing.knowledge_budget(window, self.conversation_room_tokens)

    def as_argument(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_argument(cls, argument: str) -> "RenderSettings":
        return cls(**json.loads(argument))


def load_tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


def render_bots(prompts_dir: Path, tokenizer: Any, relevant_lines: int, knowledge_budget: int) -> Rendered:
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
        folder.name: _render_bot(folder, assembler, relevant_lines, knowledge_budget)
        for folder in bot_folders(prompts_dir)
    }
    return {"model_problems": [asdict(problem) for problem in model_problems], "bots": bots}


def _render_bot(
    folder: Path, assembler: PromptAssembler | None, relevant_lines: int, knowledge_budget: int
) -> Rendered:
    try:
        bot = load_bot(folder)
    except BotDefinitionError as error:
        return {"error": str(error)}
    rendered: Rendered = {"texts": render_fixed_texts(folder), "prefix_ids": [], "first_turn_tokens": 0}
    if assembler is not None:
        question = in_language_or_english(TYPICAL_QUESTIONS, bot.language)
        bot_prefix = assembler.bot_prefix(bot, knowledge_budget)
        prefix = list(bot_prefix.token_ids)
        note = bot.reference.note(question, relevant_lines)
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


def render_process_command(prompts_dir: Path, model_dir: Path, settings: RenderSettings) -> list[str]:
    """The command of a fresh process that renders the bots and prints them as JSON."""
    return [
        sys.executable,
        "-m",
        "backend.authoring.rendering",
        str(prompts_dir),
        str(model_dir),
        settings.as_argument(),
    ]


def _render_process_main(argv: list[str]) -> None:
    prompts_dir, model_dir, settings = Path(argv[0]), Path(argv[1]), RenderSettings.from_argument(argv[2])
    budget = settings.knowledge_budget(model_dir)
    json.dump(
        render_bots(prompts_dir, load_tokenizer(model_dir), settings.relevant_lines, budget), sys.stdout
    )


if __name__ == "__main__":
    _render_process_main(sys.argv[1:])
