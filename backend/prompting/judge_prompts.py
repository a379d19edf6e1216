"""The fixed prompts of the questions the model answers yes or no (`judges/yes_no.py`).

Each judge is a TOML file with one table per language: an instruction and labelled examples.
The shared ones are `prompts/_judges/<name>.toml` (a prompts folder without them uses the
shipped ones); a bot replaces one with its own `prompts/<bot>/judges/<name>.toml`. The
instruction and examples are the same for every request, so the engine serves them from
its prefix cache: only the item judged is new.
"""

import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backend.config import PROJECT_ROOT
from backend.languages import (
    FALLBACK,
    in_language,
    in_language_or_english,
    primary_language,
    table_in_language,
)

SHARED_FOLDER = "_judges"
SHIPPED = PROJECT_ROOT / "prompts" / SHARED_FOLDER
# The questions the app asks; see backend/conversations.
JUDGES = ("handoff", "offer_made", "offer_accepted", "unanswered", "supported", "opening", "line_answers")
IN_CONTEXT = {"supported", "opening"}  # asked at the end of the conversation itself: no examples
ANSWERS = {"yes": True, "no": False}


# What a judge's file may give in a language without asking its question in it: the words the
# app reads and writes with the judge. A language's table of these alone (line_answers' quote
# in Spanish, say) leaves the question to English's table.
WORDS = {
    "line_answers": {
        "unknown_openings",
        "quote",
        "unknown",
        "quote_with_help_center",
        "unknown_with_help_center",
    },
    "opening": {"yes_openings", "no_openings", "retry_note"},
}


class JudgePromptError(ValueError):
    """A judge file that does not parse or lacks what the judge needs; names the file."""


@dataclass(frozen=True)
class JudgeExample:
    item: str  # what is judged, as the model reads it
    answer: bool


@dataclass(frozen=True)
class JudgePrompt:
    name: str
    instruction: str
    examples: tuple[JudgeExample, ...]
    threshold: float  # "yes" when its probability, against "no", is above this
    source: Path
    # Other models' own thresholds, by model name (`[<lang>.model_thresholds]`): each model
    # leans its own way, so each is calibrated apart (`prefixdesk judges --calibrate`).
    model_thresholds: dict[str, float] = field(default_factory=dict)

    def threshold_for(self, model: str) -> float:
        """The threshold for the model of that name: its own, else the file's `threshold`."""
        return self.model_thresholds.get(model, self.threshold)


def format_item(fields: dict[str, str], language: str) -> str:
    """One judged item as the model reads it: labelled lines, the same in examples and requests;
    of the bot's previous message, its end (`message_end`)."""
    labels = in_language_or_english(LABELS, language)
    values = {key: message_end(value) if key == "previous_reply" else value for key, value in fields.items()}
    return "\n".join(f"{labels[key]}: {value.strip()}" for key, value in values.items() if value.strip())


# What the handoff judges read of the bot's previous message: its end, where it asks or offers
# something. Read whole, a reply of up to 256 tokens added as many to both judges' prefill, in
# the step that also computes the next reply's first token.
MESSAGE_END_WIDTH = 200  # characters; a CJK character counts as 3 (about one token each)
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
CUT = "…"


def message_end(text: str, width: int = MESSAGE_END_WIDTH) -> str:
    """The last sentences of `text` that fit in `width`; if even the last does not, its end
    from a word's start. What is left out is marked "…"."""
    text = text.strip()
    widths = [0] * (len(text) + 1)  # of each suffix: widths[i] is text[i:]'s
    for i in range(len(text) - 1, -1, -1):
        widths[i] = widths[i + 1] + (3 if unicodedata.east_asian_width(text[i]) in ("W", "F") else 1)
    if widths[0] <= width:
        return text
    starts = (match.end() for match in SENTENCE_END.finditer(text) if match.end() < len(text))
    start = next((start for start in starts if widths[start] <= width), None)
    if start is not None:
        return CUT + text[start:]
    end = text[next(i for i, suffix in enumerate(widths) if suffix <= width) :]
    return CUT + (end.split(" ", 1)[1] if " " in end.rstrip() else end)


LABELS = {
    "en": {
        "previous_reply": "Assistant's previous message",
        "text": "Customer's message",
        "question": "Customer's question",
        "reply": "Assistant's reply",
        "line": "Policy line",
    },
    "zh": {
        "previous_reply": "客服上一条消息",
        "text": "顾客消息",
        "question": "顾客问题",
        "reply": "客服回复",
        "line": "政策条文",
    },
}
ITEM_FIELDS = {
    "handoff": ("text",),
    "offer_made": ("previous_reply",),
    "offer_accepted": ("previous_reply", "text"),
    "unanswered": ("question", "reply"),
    "line_answers": ("question", "line"),
}


# Which judges a bot asks unless its bot.toml `[judges]` says otherwise. The handoff judges
# (`offer_made` and `offer_accepted` read answers to the bot's offer of a person, beside the
# handoff judge) and `line_answers` (a policy line quoted instead of "I don't know") by
# default: on the default (0.5B) model the others were no better than chance on the labelled
# sets and the eval (docs/quality.md); turn them on with a model that passes them.
DEFAULT_SWITCHES = {
    "handoff": True,
    "offer_accepted": True,  # and with it `offer_made`
    "unanswered": False,
    "supported": False,
    "opening": False,
    "line_answers": True,
}


# offer_made is the offer_accepted judge's other half and follows its switch.
SWITCHES = tuple(name for name in JUDGES if name != "offer_made")


def judge_switches(config: dict[str, object]) -> dict[str, bool]:
    unknown = set(config) - set(SWITCHES)
    if unknown or not all(isinstance(on, bool) for on in config.values()):
        raise JudgePromptError(f"[judges] takes {list(SWITCHES)} = true or false; got {config}")
    switches = {name: bool(config.get(name, DEFAULT_SWITCHES[name])) for name in SWITCHES}
    # offer_accepted helps the handoff judge and is never asked alone: a bot that turns the
    # handoff judge off (to answer sooner) turns both off.
    switches["offer_accepted"] = switches["offer_accepted"] and switches["handoff"]
    switches["offer_made"] = switches["offer_accepted"]
    return switches


def load_judge_prompts(
    bot_folder: Path, language: str, names: tuple[str, ...] = JUDGES
) -> dict[str, JudgePrompt]:
    """A bot's judges: its own (`<bot>/judges/`), else those its prompts folder shares."""
    shared = (bot_folder.parent / SHARED_FOLDER, SHIPPED)
    return {
        name: load_judge_prompt(_find(name, bot_folder / "judges", *shared), name, language) for name in names
    }


def shared_judge_prompts(
    prompts_dir: Path, language: str, names: tuple[str, ...] = JUDGES
) -> dict[str, JudgePrompt]:
    """The judges a bot of `prompts_dir` gets unless it brings its own: `_judges/` there, else
    the ones shipped in prompts/_judges."""
    shared = (prompts_dir / SHARED_FOLDER, SHIPPED)
    return {name: load_judge_prompt(_find(name, *shared), name, language) for name in names}


def judge_file(name: str, bot_folder: Path) -> Path:
    """The file of a bot's judge: its own, else its prompts folder's, else the shipped one."""
    return _find(name, bot_folder / "judges", bot_folder.parent / SHARED_FOLDER, SHIPPED)


@dataclass(frozen=True)
class InEnglish:
    """What a bot in another language than English does in English, from one reading of its
    judge files: `asked`, the judges whose question it is asked in English (no table in its
    language, or one of their words alone, `WORDS`); `said`, the judges with words whose files
    have no table in its language, so the app reads and writes those words in English (a yes or
    no, "I don't know", its quote of the source lines)."""

    asked: list[str]
    said: list[str]


def in_english(bot_folder: Path, language: str) -> InEnglish:
    documents = _judge_documents(bot_folder, language)
    own = {name: in_language(document, language) for name, document in documents.items()}
    return InEnglish(
        asked=[
            name
            for name, document in documents.items()
            if own[name] is None or question_table(document, language, name) is not own[name]
        ],
        said=[name for name in documents if name in WORDS and own[name] is None],
    )


def _judge_documents(bot_folder: Path, language: str) -> dict[str, dict[str, Any]]:
    """The bot's judge files, read; none for a bot in English, which asks and says all in it."""
    documents: dict[str, dict[str, Any]] = {}
    if primary_language(language) == FALLBACK:
        return documents
    for name in JUDGES:
        try:
            documents[name] = tomllib.loads(judge_file(name, bot_folder).read_text(encoding="utf-8"))
        except (JudgePromptError, tomllib.TOMLDecodeError):
            continue  # the bot fails to load with that error, which names the file
    return documents


def question_table(document: dict[str, Any], language: str, name: str) -> Any:
    """The table a judge's question is asked from: the language's (`table_in_language`), or
    English's where the language's holds only the judge's words (`WORDS`)."""
    table = table_in_language(document, language)
    if isinstance(table, dict) and table and set(table) <= WORDS.get(name, set()):
        return document.get(FALLBACK)
    return table


def _find(name: str, *folders: Path) -> Path:
    """The first of `folders` that has the judge's file."""
    for folder in folders:
        if (path := folder / f"{name}.toml").is_file():
            return path
    raise JudgePromptError(f"judge {name!r}: no {name}.toml in {', '.join(map(str, folders))}")


def load_judge_prompt(path: Path, name: str, language: str) -> JudgePrompt:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:  # its message gives the line and column
        raise JudgePromptError(f"{path}: {error}") from error
    table = question_table(document, language, name)
    if not isinstance(table, dict):
        raise JudgePromptError(f"{path}: no [{language}] or [en] table")
    instruction = table.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise JudgePromptError(f"{path}: [{language}] needs an instruction")
    fields = ITEM_FIELDS.get(name, ())
    examples = tuple(
        _example(path, language, n, raw, fields) for n, raw in enumerate(table.get("example", []))
    )
    if name in IN_CONTEXT and examples:
        raise JudgePromptError(
            f"{path}: this question is asked inside the conversation; it takes no examples"
        )
    if name not in IN_CONTEXT and (not any(e.answer for e in examples) or all(e.answer for e in examples)):
        raise JudgePromptError(f"{path}: [{language}] needs examples answered yes and examples answered no")
    threshold = _threshold(path, table.get("threshold", document.get("threshold", 0.5)))
    by_model = table.get("model_thresholds", {})
    if not isinstance(by_model, dict):
        raise JudgePromptError(f"{path}: [{language}.model_thresholds] must map model names to thresholds")
    model_thresholds = {str(model): _threshold(path, value) for model, value in by_model.items()}
    return JudgePrompt(name, instruction.strip(), examples, threshold, path, model_thresholds)


def _threshold(path: Path, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise JudgePromptError(f"{path}: a threshold must be a number between 0 and 1, not {value!r}")
    return float(value)


def _example(path: Path, language: str, n: int, raw: Any, fields: tuple[str, ...]) -> JudgeExample:
    where = f"{path}: [[{language}.example]] number {n + 1}"
    if not isinstance(raw, dict) or str(raw.get("answer", "")).lower() not in ANSWERS:
        raise JudgePromptError(f'{where}: answer must be "yes" or "no"')
    unknown = set(raw) - {*fields, "answer"}
    if unknown or not str(raw.get(fields[-1], "")).strip():
        optional = f", may have {fields[0]!r}" if len(fields) > 1 else ""
        raise JudgePromptError(f"{where}: needs {fields[-1]!r}{optional}, nothing else")
    item = format_item({key: str(raw.get(key, "")) for key in fields}, language)
    return JudgeExample(item, ANSWERS[str(raw["answer"]).lower()])
