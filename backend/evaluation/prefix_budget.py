"""The eval without the bots whose fixed prefix is too long to prefill in a gate's time."""

from typing import Any

import typer

from backend.authoring.rendering import RenderSettings, load_tokenizer, render_bots
from backend.config import Settings
from backend.engine.model_store import resolve_model_dir


def bots_within_prefix_budget(settings: Settings, cases: dict[str, Any], budget: int) -> dict[str, Any]:
    """The bots' cases but those whose fixed prefix, as the server renders it, exceeds `budget`."""
    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    server = RenderSettings.of(settings)
    rendered = render_bots(
        settings.prompts_dir,
        load_tokenizer(model_dir),
        server.relevant_lines,
        server.knowledge_budget(model_dir),
    )
    kept = {}
    for slug, bot_cases_ in cases.items():
        tokens = len(rendered["bots"][slug].get("prefix_ids", []))
        if tokens > budget:
            typer.echo(f"{slug}: skipped, its fixed prefix is {tokens} tokens (--max-prefix-tokens {budget})")
        else:
            kept[slug] = bot_cases_
    return kept
