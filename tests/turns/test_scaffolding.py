"""The scaffold filter on streamed text: a phrase split over any pieces never shows."""

import pytest

from backend.turns.scaffolding import ScaffoldFilter

HEADING = "The policy lines that best match the customer's next message:"


def streamed(text: str, size: int, phrases=(HEADING,)) -> str:
    watch = ScaffoldFilter(phrases)
    shown = "".join(watch.feed(text[n : n + size]) for n in range(0, len(text), size))
    return shown + watch.rest()


@pytest.mark.parametrize("size", [1, 2, 5, 13, 1000])
def test_a_heading_split_over_pieces_is_taken_out_and_the_rest_kept(size):
    text = f"{HEADING}\n- Returns within 30 days. {HEADING} Thanks!"
    assert streamed(text, size) == "\n- Returns within 30 days.  Thanks!"


def test_text_that_only_starts_like_a_heading_is_shown_once_it_cannot_be_one():
    watch = ScaffoldFilter([HEADING])
    assert watch.feed("The ") == ""  # may yet be the heading
    assert watch.feed("tent") == "The tent"
    assert watch.feed(" is The") == " is "
    assert watch.rest() == "The"


def test_several_phrases_in_any_language():
    assert (
        streamed(
            "与顾客下一条消息最相关的政策条款：冰箱保修3年。",
            2,
            ("与顾客下一条消息最相关的政策条款：", HEADING),
        )
        == "冰箱保修3年。"
    )
