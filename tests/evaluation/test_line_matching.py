"""`prefixdesk line-matching`: how often the line that answers a question comes first."""

from pathlib import Path

from typer.testing import CliRunner

from backend.cli import app
from backend.config import PROJECT_ROOT
from backend.evaluation.line_matching import first_line_hits

PAIRS = """
[[pair]]
language = "en"
question = "My boots were delivered six weeks ago and I never wore them. Too late to send them back?"
line = "Unused items can be returned within 45 days of delivery."
answers = true

[[pair]]
language = "en"
question = "When will my order arrive?"
line = "Orders are delivered in 2 to 4 business days."
answers = true

[[pair]]
language = "en"
question = "Can I return shoes I have worn?"
line = "Orders are delivered in 2 to 4 business days."
answers = false
"""


def test_each_question_with_an_answering_line_is_matched_against_all_the_sets_lines(tmp_path: Path):
    labelled = tmp_path / "line_answers.toml"
    labelled.write_text(PAIRS, encoding="utf-8")
    figures = first_line_hits(labelled)["en"]
    assert (figures["questions"], figures["lines"]) == (2, 2)
    # "delivered" is the only word the first question shares with the lines: by words alone it
    # finds the delivery line; its meaning brings the returns line level, and a tie goes to the
    # line that stands first.
    assert (figures["hybrid"], figures["words"]) == (2, 1)


def test_on_the_labelled_sets_words_and_meaning_find_the_answer_at_least_as_often_as_words(tmp_path: Path):
    output = tmp_path / "line-matching.json"
    result = CliRunner().invoke(app, ["line-matching", "--output", str(output)])
    assert result.exit_code == 0, result.output
    assert "| `tests/quality/line_answers.toml` zh | 25 | 50 |" in result.output
    assert "| `shop-en` eval cases |" in result.output
    report = first_line_hits(PROJECT_ROOT / "tests" / "quality" / "line_answers.toml")
    for figures in report.values():
        assert figures["hybrid"] >= figures["words"], figures
        # Among the lines quoted in place of a doubted reply too.
        assert figures["hybrid in 2"] >= figures["words in 2"], figures
