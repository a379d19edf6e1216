"""Each answer-quality technique switched off in turn, every bot's eval run on each variant
in one command, so that the rows of the ablation table come from one run on one machine."""

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.config import Settings


@dataclass(frozen=True)
class Variant:
    name: str
    change: Callable[[Settings, Path], Settings]  # the settings of the variant, given a scratch folder


def _shipped(settings: Settings, scratch: Path) -> Settings:
    return settings


def _without_examples(settings: Settings, scratch: Path) -> Settings:
    prompts = prompts_without_examples(settings.prompts_dir, scratch)
    return settings.model_copy(update={"prompts_dir": prompts})


def _without_lines(settings: Settings, scratch: Path) -> Settings:
    return settings.model_copy(update={"relevant_lines": 0})


def _lines_by_meaning_too(settings: Settings, scratch: Path) -> Settings:
    prompts = prompts_with_setting(settings.prompts_dir, scratch, "reference", "matching", '"hybrid"')
    return settings.model_copy(update={"prompts_dir": prompts})


def _without_handoff_judges(settings: Settings, scratch: Path) -> Settings:
    prompts = prompts_with_judge(settings.prompts_dir, scratch, "handoff", on=False)  # offer_accepted too
    return settings.model_copy(update={"prompts_dir": prompts})


def _without_quotes(settings: Settings, scratch: Path) -> Settings:
    prompts = prompts_with_judge(settings.prompts_dir, scratch, "line_answers", on=False)
    return settings.model_copy(update={"prompts_dir": prompts})


def _with_second_try(settings: Settings, scratch: Path) -> Settings:
    prompts = prompts_with_judge(settings.prompts_dir, scratch, "opening")
    return settings.model_copy(update={"prompts_dir": prompts, "second_try": True})


def _without_any(settings: Settings, scratch: Path) -> Settings:
    without = _without_lines(_without_examples(settings, scratch), scratch)
    return without.model_copy(update={"model_judges": False})


VARIANTS = (
    Variant("as shipped", _shipped),
    Variant("without worked examples", _without_examples),
    Variant("without the matching policy lines", _without_lines),
    Variant("without the handoff judges", _without_handoff_judges),
    Variant("without the quoted policy line", _without_quotes),
    Variant("without any of them", _without_any),
    # Off by default on the default model (docs/quality.md): measured switched on.
    Variant("with the second try when the opening is doubted", _with_second_try),
    Variant("with the lines ranked by meaning too", _lines_by_meaning_too),
)


def prompts_without_examples(prompts_dir: Path, scratch: Path) -> Path:
    """A copy of prompts/ in `scratch` with every bot's worked examples removed."""
    copy = scratch / "prompts-without-examples"
    if not copy.exists():
        shutil.copytree(prompts_dir, copy)
        for examples in copy.glob("*/examples.toml"):
            examples.unlink()
    return copy


def prompts_with_judge(prompts_dir: Path, scratch: Path, judge: str, *, on: bool = True) -> Path:
    """A copy of prompts/ in `scratch` where every bot asks `judge`, or with `on=False` does not
    (its `[judges]` says so)."""
    return prompts_with_setting(prompts_dir, scratch, "judges", judge, "true" if on else "false")


def prompts_with_setting(prompts_dir: Path, scratch: Path, table: str, key: str, value: str) -> Path:
    """A copy of prompts/ in `scratch` where every bot's bot.toml sets `key = value` (TOML) in
    `[table]`, whatever it said before."""
    copy = scratch / "-".join(("prompts", table, key, re.sub(r"\W", "", value)))
    if not copy.exists():
        shutil.copytree(prompts_dir, copy)
        for bot_toml in copy.glob("*/bot.toml"):
            text = bot_toml.read_text(encoding="utf-8")
            text = re.sub(rf"(?m)^{key}\s*=.*\n", "", text)  # no other table of a bot's uses these keys
            if re.search(rf"(?m)^\[{table}\]", text):
                text = re.sub(rf"(?m)^\[{table}\]\n", f"[{table}]\n{key} = {value}\n", text, count=1)
            else:
                text += f"\n[{table}]\n{key} = {value}\n"
            bot_toml.write_text(text, encoding="utf-8")
    return copy


def ablation_table(rows: dict[str, dict[str, Any]]) -> str:
    """Markdown: a row per variant and bot, as docs/quality.md shows it."""
    lines = [
        "| variant | bot | passed | first token p50 | first token shown p50 | the same, replies shown as "
        "written | reply p50 | cached share | handoff P / R |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for variant, bots in rows.items():
        for slug, result in bots.items():
            handoff = result["handoff"]
            lines.append(
                f"| {variant} | `{slug}` | {result['passed']} / {result['cases']} | "
                f"{result['ttft_ms_p50']} ms | {result.get('first_token_shown_ms_p50')} ms | "
                f"{result.get('first_token_shown_as_written_ms_p50')} ms | "
                f"{result['total_ms_p50']} ms | {result['cached_share']} | "
                f"{handoff['precision']} / {handoff['recall']} |"
            )
    return "\n".join(lines)
