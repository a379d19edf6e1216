"""`prefixdesk judges`: each judge scored on the labelled sets, per language, at its own
thresholds or at those a folder of development sets chooses."""

import asyncio
from pathlib import Path
from typing import Any

from backend.config import Settings
from backend.engine.model_store import resolve_model_dir
from backend.evaluation.labelled import (
    JudgedSet,
    calibrated_offer_threshold,
    calibrated_threshold,
    judged_items,
    summary,
)
from backend.prompting.chat_format import ChatFormat

Thresholds = tuple[float, float | None]  # the judge's, and offer_accepted's beside it (if any)


async def score_judges(
    settings: Settings, labelled: Path, development: Path | None, names: list[str]
) -> dict[str, Any]:
    from backend.engine.factory import start_engine
    from backend.engine.model_tokenizer import load_tokenizer

    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    chat_format = ChatFormat(await asyncio.to_thread(load_tokenizer, model_dir))
    engine = await start_engine(settings, model_dir)
    judges: dict[str, Any] = {}
    try:
        for name in names:
            held_out = await judged_items(engine, chat_format, settings.prompts_dir, labelled, name)
            chosen = {lang: (judged.threshold, judged.offer_threshold) for lang, judged in held_out.items()}
            if development is not None:
                dev = await judged_items(engine, chat_format, settings.prompts_dir, development, name)
                for language in held_out:
                    threshold = calibrated_threshold(dev[language].items)
                    chosen[language] = (threshold, calibrated_offer_threshold(dev[language].items, threshold))
            judges[name] = {
                language: _figures(judged, chosen[language], calibrated=development is not None)
                for language, judged in held_out.items()
            }
    finally:
        engine.shutdown()
    return {
        "model": str(settings.model or "default"),
        "model_name": chat_format.model_name,
        "calibrated_on": str(development) if development else None,
        "judges": judges,
    }


def _figures(judged: JudgedSet, chosen: Thresholds, *, calibrated: bool) -> dict[str, Any]:
    figures = summary(judged.items, *chosen) | judged.costs
    if chosen[1] is not None:  # what the handoff judge alone would say
        alone = summary(judged.items, chosen[0])
        kept = ("precision", "recall", "accuracy")
        figures["handoff_judge_alone"] = {key: alone[key] for key in kept}
    if calibrated:
        own = summary(judged.items, judged.threshold, judged.offer_threshold)
        figures["own_threshold"] = {key: own[key] for key in ("threshold", "precision", "recall", "accuracy")}
    return figures
