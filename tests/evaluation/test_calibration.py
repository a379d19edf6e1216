"""Choosing a judge's threshold on a development set: the most items right, near 0.5 on ties."""

import re

from typer.testing import CliRunner

from backend.cli import app
from backend.evaluation.labelled import Scored, calibrated_offer_threshold, calibrated_threshold, summary


def _items(*pairs: tuple[bool, float]) -> list[Scored]:
    return [Scored(truth, p_yes, f"item {n}") for n, (truth, p_yes) in enumerate(pairs)]


def test_the_threshold_that_gets_most_items_right_is_chosen():
    # An under-confident judge: every "yes" item scores below 0.5, every "no" below 0.2.
    scored = _items((True, 0.45), (True, 0.3), (True, 0.25), (False, 0.1), (False, 0.15), (False, 0.05))
    threshold = calibrated_threshold(scored)
    assert 0.15 <= threshold < 0.25
    assert summary(scored, threshold)["accuracy"] == 1.0
    assert summary(scored, 0.5)["recall"] == 0.0


def test_of_equally_good_thresholds_the_one_nearest_the_middle_is_chosen():
    scored = _items((True, 0.9), (False, 0.1))
    assert calibrated_threshold(scored) == 0.5
    scored = _items((True, 0.35), (False, 0.1))
    assert calibrated_threshold(scored) == 0.34  # every one from 0.10 to 0.34 is right; 0.34 is nearest


def test_the_summary_names_the_threshold_and_the_items_judged_wrong():
    scored = _items((True, 0.6), (True, 0.4), (False, 0.45))
    figures = summary(scored, 0.42)
    assert figures["threshold"] == 0.42
    assert (figures["precision"], figures["recall"], figures["accuracy"]) == (0.5, 0.5, 0.333)
    assert [error["p_yes"] for error in figures["errors"]] == [0.4, 0.45]


def test_an_answer_to_the_bots_offer_is_a_yes_when_the_offer_judges_say_so():
    # The handoff judge misses two short acceptances; the offer judges, asked only about
    # messages that answer the bot (the others have no P for them), find them: the bot offered
    # a person (offer_made) and the customer agreed (offer_accepted).
    def answer(truth: bool, p_yes: float, item: str, accepted: float, made: float) -> Scored:
        return Scored(truth, p_yes, item, p_offer_accepted=accepted, p_offer_made=made, made_threshold=0.4)

    scored = [
        Scored(True, 0.8, "asks for a manager"),
        answer(True, 0.2, "ok do it", 0.7, 0.9),
        answer(True, 0.1, "please do", 0.6, 0.5),
        answer(False, 0.1, "no thanks", 0.1, 0.9),
        answer(False, 0.2, "yes please, to another offer", 0.45, 0.1),
        Scored(False, 0.1, "where is my parcel?"),
    ]
    threshold = calibrated_threshold(scored)
    assert summary(scored, threshold)["recall"] == 0.333
    offer_threshold = calibrated_offer_threshold(scored, threshold)
    # The "yes" to another offer (0.45) no longer bounds it from below: offer_made says no there.
    assert offer_threshold is not None and 0.1 <= offer_threshold < 0.6
    figures = summary(scored, threshold, offer_threshold)
    assert (figures["precision"], figures["recall"], figures["accuracy"]) == (1.0, 1.0, 1.0)
    assert figures["offer_accepted_threshold"] == offer_threshold and figures["offer_made_threshold"] == 0.4
    assert calibrated_offer_threshold(_items((True, 0.9), (False, 0.1)), 0.5) is None  # never asked


def test_a_yes_to_a_question_that_offered_no_person_is_not_a_request_for_one():
    # offer_accepted reads any yes as acceptance; without an offer of a person it does not count.
    scored = [Scored(False, 0.2, "yes please, to the link", p_offer_accepted=0.9, p_offer_made=0.1)]
    assert summary(scored, 0.5, 0.5)["accuracy"] == 1.0
    offered = [Scored(True, 0.2, "yes please, to a colleague", p_offer_accepted=0.9, p_offer_made=0.8)]
    assert summary(offered, 0.5, 0.5)["recall"] == 1.0


def test_judges_scores_the_sets_a_folder_has_and_names_what_is_missing(tmp_path):
    # Checked before the engine starts: a folder with no labelled set, or a development
    # folder without a set the labelled folder has, is refused with its name.
    def said(result) -> str:  # the error box's text, unwrapped
        return " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())

    runner = CliRunner(env={"COLUMNS": "500", "TERMINAL_WIDTH": "500"})  # one line per message
    empty = runner.invoke(app, ["judges", "--labelled", str(tmp_path)])
    assert empty.exit_code == 2 and "holds none of handoff_requests.toml" in said(empty)
    (tmp_path / "handoff_requests.toml").write_text("", encoding="utf-8")
    development = tmp_path / "dev"
    development.mkdir()
    args = ["judges", "--labelled", str(tmp_path), "--calibrate", str(development)]
    lacking = runner.invoke(app, args)
    assert lacking.exit_code == 2 and "lacks handoff_requests.toml, which" in said(lacking)
