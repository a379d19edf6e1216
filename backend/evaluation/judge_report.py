"""What `prefixdesk judges` prints of its scores: per judge and language its figures and the
items it got wrong and, after a calibration, the chosen thresholds as the judge files write them."""

from pathlib import Path
from typing import Any

from backend.engine.model_store import DEFAULT_MODEL


def figures_lines(report: dict[str, Any], calibrate: Path | None) -> list[str]:
    lines = []
    for judge, languages in report["judges"].items():
        for language, figures in languages.items():
            lines.append(
                f"{judge:<11} {language}  threshold {figures['threshold']}  "
                f"precision {figures['precision']}  recall {figures['recall']}  "
                f"accuracy {figures['accuracy']}  ({figures['items']} items, "
                f"{figures['judge_ms_mean']} ms, {figures['new_tokens_mean']} new tokens each, "
                f"prefix {figures['prefix_tokens']})"
            )
            lines += _comparison_lines(figures, calibrate)
            lines += _error_lines(figures["errors"])
    return lines


def _comparison_lines(figures: dict[str, Any], calibrate: Path | None) -> list[str]:
    """The figures at the judge's own threshold, and with and without the offer judges."""
    lines = []
    if "own_threshold" in figures:
        own = figures["own_threshold"]
        lines.append(
            f"    chosen on {calibrate}; at the judge's own threshold {own['threshold']}: precision "
            f"{own['precision']}  recall {own['recall']}  accuracy {own['accuracy']}"
        )
    if "offer_accepted_threshold" in figures:
        offer, offer_ms = figures["offer_accepted_threshold"], figures.get("offer_judges_ms_mean")
        made = figures.get("offer_made_threshold")
        lines.append(
            f"    with offer_made (threshold {made}) and offer_accepted (threshold {offer}) "
            f"beside it, {offer_ms} ms for both"
        )
        if "handoff_judge_alone" in figures:
            alone = figures["handoff_judge_alone"]
            lines.append(
                f"    the handoff judge alone: precision {alone['precision']}  "
                f"recall {alone['recall']}  accuracy {alone['accuracy']}"
            )
    return lines


def _error_lines(errors: list[dict[str, Any]]) -> list[str]:
    lines = []
    for error in errors:
        item = error["item"].replace("\n", " | ")[:150]
        offer = "".join(
            f", {name} {error[f'p_{name}']}"
            for name in ("offer_made", "offer_accepted")
            if f"p_{name}" in error
        )
        lines.append(f"    expected {error['expected']} (p_yes {error['p_yes']}{offer}): {item}")
    return lines


def threshold_lines(report: dict[str, Any]) -> list[str]:
    """The chosen thresholds, as lines of prompts/_judges/<judge>.toml: the default model's
    plain, another model's under its name."""
    lines = []
    name = report["model_name"]
    for judge, languages in report["judges"].items():
        for language, figures in languages.items():
            chosen = [(judge, figures["threshold"])]
            if "offer_accepted_threshold" in figures:
                chosen.append(("offer_accepted", figures["offer_accepted_threshold"]))
            for file, threshold in chosen:
                if name == DEFAULT_MODEL.name:
                    lines.append(f"  {file}.toml [{language}] threshold = {threshold}")
                else:
                    lines.append(f'  {file}.toml [{language}.model_thresholds] "{name}" = {threshold}')
    return lines
