"""Each answer-quality technique switched off in turn, every bot's eval run on each variant
in one command, so that the rows of the ablation table come from one run on one machine."""

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


def _without_judges(settings: Settings, scratch: Path) -> Settings:
    return settings.model_copy(update={"model_judges": False})


def _without_any(settings: Settings, scratch: Path) -> Settings:
    return _without_judges(_without_lines(_without_examples(settings, scratch), scratch), scratch)


VARIANTS = (
    Variant("as shipped", _shipped),
    Variant("without worked examples", _without_examples),
    Variant("without the matching policy lines", _without_lines),
    Variant("without the handoff judge", _without_judges),
    Variant("without any of them", _without_any),
)


def prompts_without_examples(prompts_dir: Path, scratch: Path) -> Path:
    """A copy of prompts/ in `scratch` with every bot's worked examples removed."""
    copy = scratch / "prompts-without-examples"
    if not copy.exists():
        shutil.copytree(prompts_dir, copy)
        for examples in copy.glob("*/examples.toml"):
            examples.unlink()
    return copy


def ablation_table(rows: dict[str, dict[str, Any]]) -> str:
    """Markdown: a row per variant and bot, as docs/quality.md shows it."""
    lines = [
        "| variant | bot | passed | first token p50 | reply p50 | cached share | handoff P / R |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for variant, bots in rows.items():
        for slug, result in bots.items():
            handoff = result["handoff"]
            lines.append(
                f"| {variant} | `{slug}` | {result['passed']} / {result['cases']} | "
                f"{result['ttft_ms_p50']} ms | {result['total_ms_p50']} ms | {result['cached_share']} | "
                f"{handoff['precision']} / {handoff['recall']} |"
            )
    return "\n".join(lines)
