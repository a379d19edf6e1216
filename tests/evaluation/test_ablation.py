"""The ablation's variants: each switches off what it names and nothing else."""

from pathlib import Path

from backend.config import PROJECT_ROOT, Settings
from backend.evaluation.ablation import VARIANTS, ablation_table
from backend.prompting.definitions import load_bots


def test_each_variant_switches_off_its_technique(tmp_path: Path):
    shipped = Settings(prompts_dir=PROJECT_ROOT / "prompts", relevant_lines=1, model_judges=True)
    variants = {variant.name: variant.change(shipped, tmp_path) for variant in VARIANTS}

    def techniques(settings: Settings) -> tuple[bool, bool, bool, bool]:
        """Worked examples, the matching lines, the handoff judges, the quoted line: on for every bot."""
        bots = load_bots(settings.prompts_dir).values()
        examples = all(bot.examples for bot in bots)
        handoff = settings.model_judges and all("handoff" in bot.judges for bot in bots)
        quotes = settings.model_judges and all(bot.quoting is not None for bot in bots)
        assert examples or not any(bot.examples for bot in bots)
        return examples, settings.relevant_lines > 0, handoff, quotes

    assert techniques(variants["as shipped"]) == (True, True, True, True)
    assert techniques(variants["without worked examples"]) == (False, True, True, True)
    assert techniques(variants["without the matching policy lines"]) == (True, False, True, True)
    assert techniques(variants["without the handoff judges"]) == (True, True, False, True)
    assert techniques(variants["without the quoted policy line"]) == (True, True, True, False)
    assert techniques(variants["without any of them"]) == (False, False, False, False)
    # The second try is off as shipped; its variant turns it on for every bot and changes nothing else.
    second_try = variants["with the second try when the opening is doubted"]
    assert techniques(second_try) == (True, True, True, True)
    assert all(bot.second_try is None for bot in load_bots(shipped.prompts_dir).values())
    assert all(bot.second_try is not None for bot in load_bots(second_try.prompts_dir).values())
    # Ranking the note's lines by meaning too (off as shipped) changes only how they are ranked.
    by_meaning_too = variants["with the lines ranked by meaning too"]
    assert techniques(by_meaning_too) == (True, True, True, True)
    assert not any(bot.reference.note_by_meaning for bot in load_bots(shipped.prompts_dir).values())
    assert all(bot.reference.note_by_meaning for bot in load_bots(by_meaning_too.prompts_dir).values())
    # The shipped prompts are copied, never changed.
    assert any((PROJECT_ROOT / "prompts").glob("*/examples.toml"))


def test_the_table_has_a_row_per_variant_and_bot():
    result = {
        "passed": 30,
        "cases": 50,
        "ttft_ms_p50": 250.0,
        "total_ms_p50": 1800.0,
        "first_token_shown_ms_p50": 400.0,
        "first_token_shown_as_written_ms_p50": 380.0,
        "cached_share": 0.95,
        "handoff": {"precision": 1.0, "recall": 0.8},
    }
    table = ablation_table({"as shipped": {"shop-en": result, "appliance-zh": result}})
    row = (
        "| as shipped | `shop-en` | 30 / 50 | 250.0 ms | 400.0 ms | 380.0 ms | 1800.0 ms | 0.95 | 1.0 / 0.8 |"
    )
    assert table.splitlines()[2] == row
    assert len(table.splitlines()) == 4
