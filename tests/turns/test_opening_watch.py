"""The opening watch on token lists, without an engine: what it holds, asks and releases."""

from backend.engine.interface import TokenDelta
from backend.prompting.openings import Opening, Openings
from backend.prompting.quoting import Quoting
from backend.turns.opening_watch import (
    MAX_HELD_TOKENS,
    AskLines,
    AskOpening,
    Contradicted,
    Hold,
    OpeningWatch,
    Quoted,
    Release,
)
from backend.turns.quotes import Quote
from backend.turns.second_try import Contradiction

OPENINGS = Openings(yes=("Yes",), no=("No",))
QUOTING = Quoting(unknown_openings=("I don't know",), frame="Our policy says: {line}")


def deltas(*texts: str) -> list[TokenDelta]:
    return [TokenDelta(text, [n]) for n, text in enumerate(texts)]


def feed(watch: OpeningWatch, texts: list[str]) -> list[object]:
    return [watch.see(delta) for delta in deltas(*texts)]


def test_a_bot_without_opening_judges_is_not_watched():
    assert not OpeningWatch(None, None).watching


def test_a_plain_yes_is_held_until_it_is_a_word_then_the_judge_is_asked():
    watch = OpeningWatch(OPENINGS, None)
    steps = feed(watch, ["Y", "es", ",", " you"])
    assert steps[:2] == [Hold(), Hold()]  # "Yes" may yet be "Yesterday"
    assert steps[2] == AskOpening(Opening.YES, "Yes")


def test_an_opening_the_judge_agrees_with_is_released_with_every_held_token():
    watch = OpeningWatch(OPENINGS, None)
    assert feed(watch, ["No", ","])[-1] == AskOpening(Opening.NO, "No")
    assert watch.opening_judged(None) == Release(deltas("No", ","))


def test_an_opening_the_judge_contradicts_is_dropped():
    watch = OpeningWatch(OPENINGS, None)
    feed(watch, ["Yes", "!"])
    contradiction = Contradiction("Yes", said_yes=True, p_yes=0.1)
    assert watch.opening_judged(contradiction) == Contradicted(contradiction)


def test_a_reply_that_opens_another_way_is_released_at_once():
    watch = OpeningWatch(OPENINGS, QUOTING)
    assert feed(watch, ["You", " can"])[-1] == Release(deltas("You", " can"))


def test_i_dont_know_asks_for_the_lines_and_judges_them_early_once():
    watch = OpeningWatch(None, QUOTING)
    steps = feed(watch, ["I", " don", "'t", " know", "."])
    assert steps[0] == Hold(judge_lines=True)  # beside the opening's next tokens
    assert steps[1:4] == [Hold(), Hold(), Hold()]  # "know" may yet be "knowing"
    assert steps[4] == AskLines()
    quote = Quote("Returns within 30 days.", 0.9)
    assert watch.lines_judged(quote) == Quoted(quote)


def test_no_line_that_answers_lets_the_reply_go_on_as_written():
    watch = OpeningWatch(None, QUOTING)
    feed(watch, ["I", " don"])
    watch.no_line_answers()  # the early judging came back empty
    assert watch.see(TokenDelta("'t", [9])) == Release([*deltas("I", " don"), TokenDelta("'t", [9])])


def test_lines_are_judged_only_when_asked_if_the_turn_goes_one_request_at_a_time():
    watch = OpeningWatch(None, QUOTING, judge_lines_early=False)
    steps = feed(watch, ["I", " don", "'t", " know", ","])
    assert steps[:4] == [Hold(), Hold(), Hold(), Hold()]
    assert steps[4] == AskLines()
    assert watch.lines_judged(None) == Release(deltas("I", " don", "'t", " know", ","))


def test_the_end_of_the_reply_settles_the_opening():
    watch = OpeningWatch(OPENINGS, None)
    assert watch.see(TokenDelta("Yes", [1])) == Hold()
    assert watch.see(None, ended=True) == AskOpening(Opening.YES, "Yes")


def test_a_stop_or_too_many_blank_tokens_release_what_is_held():
    watch = OpeningWatch(OPENINGS, None)
    assert watch.see(TokenDelta("Y", [0]), stopping=True) == Release(deltas("Y"))
    blank = OpeningWatch(OPENINGS, None)
    steps = [blank.see(TokenDelta(" ", [n])) for n in range(MAX_HELD_TOKENS)]
    assert all(step == Hold() for step in steps[:-1])
    assert isinstance(steps[-1], Release)
