"""A second try when a reply opens with a yes or no that the policy does not give.

The opening words are plain logic; the path (the first reply dropped unseen, the second
written after a note with the policy's lines, the context still append-only and cached, or
the conversation handed over) runs on the real engine with the default model (the tiny
one writes only newlines): the test makes the reply's own first word a "yes", and the
judge's threshold decides its answer.
"""

import re
from pathlib import Path

import pytest

from backend.config import PROJECT_ROOT
from backend.prompting.definitions import BotDefinitionError, load_bot
from backend.prompting.openings import Opening, Openings, OpeningsError, load_second_try
from backend.turns.events import Token
from tests.helpers import done_of, first_turn, stored, take_turn

OPENINGS = Openings(yes=("Yes", "Of course", "可以"), no=("No", "不能"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes, you can.", (Opening.YES, "Yes")),
        ("  yes! ", (Opening.YES, "yes")),
        ("No. The policy", (Opening.NO, "No")),
        ("Of course, the", (Opening.YES, "Of course")),
        ("可以，延保已经激活", (Opening.YES, "可以")),
        ("不能退", (Opening.NO, "不能")),
        ("Normally it takes", (Opening.NEITHER, "")),
        ("Yesterday's order", (Opening.NEITHER, "")),
        ("The warranty", (Opening.NEITHER, "")),
        ("冰箱保修3年", (Opening.NEITHER, "")),
        ("", (Opening.UNDECIDED, "")),
        ("Ye", (Opening.UNDECIDED, "")),
        ("Yes", (Opening.UNDECIDED, "")),  # "Yes" or "Yesterday": the next token tells
        ("Of c", (Opening.UNDECIDED, "")),
        ("可", (Opening.UNDECIDED, "")),
    ],
)
def test_a_replys_first_words_commit_it_to_yes_or_no_or_not(text, expected):
    assert OPENINGS.of(text) == expected


def test_the_shipped_openings_load_for_each_language_and_bad_ones_are_named(tmp_path):
    shipped = PROJECT_ROOT / "prompts" / "_judges" / "opening.toml"
    for language in ("en", "zh"):
        second_try = load_second_try(shipped, language, {})
        assert second_try.action == "retry" and "{opening}" in second_try.retry_note
        assert second_try.openings.yes and second_try.openings.no
    assert load_second_try(shipped, "en", {"action": "handoff"}).action == "handoff"
    with pytest.raises(OpeningsError, match="action"):
        load_second_try(shipped, "en", {"action": "ask twice"})
    bad = tmp_path / "opening.toml"
    bad.write_text('[en]\ninstruction = "x"\nyes_openings = []\nno_openings = ["No"]\nretry_note = "x"\n')
    with pytest.raises(OpeningsError, match=r"opening.toml.*yes_openings"):
        load_second_try(bad, "en", {})


def _opening_judge_on(prompts: Path, bot: str = "shop-en", extra: str = "") -> Path:
    bot_toml = prompts / bot / "bot.toml"
    # The quoted policy line off: the reply the test makes open with a "yes" may say it does not know.
    judges = "[judges]\nopening = true\nline_answers = false\n"
    text = bot_toml.read_text(encoding="utf-8").replace("[judges]\n", judges, 1)
    bot_toml.write_text(text + extra, encoding="utf-8")
    return bot_toml


def test_a_bot_has_a_second_try_when_its_opening_judge_is_on(prompts_copy):
    assert load_bot(prompts_copy / "shop-en").second_try is None  # off as shipped (docs/quality.md)
    _opening_judge_on(prompts_copy, extra='\n[second_try]\naction = "handoff"\n')
    second_try = load_bot(prompts_copy / "shop-en").second_try
    assert second_try is not None and second_try.action == "handoff"
    _opening_judge_on(prompts_copy, "appliance-zh", extra='\n[second_try]\naction = "never"\n')
    with pytest.raises(BotDefinitionError, match=r"\[second_try\]"):
        load_bot(prompts_copy / "appliance-zh")


def _judge_always(prompts: Path, answer: str, opening: str) -> None:
    """The opening judge answers `answer` whatever the model says, and `opening` counts as a yes."""
    threshold = "0.000001" if answer == "yes" else "0.999999"
    text = (
        (PROJECT_ROOT / "prompts" / "_judges" / "opening.toml")
        .read_text(encoding="utf-8")
        .replace("[en]\n", f"[en]\nthreshold = {threshold}\n", 1)
    )
    quoted = '"' + opening.replace("\\", "\\\\").replace('"', '\\"') + '"'
    (prompts / "_judges" / "opening.toml").write_text(
        re.sub(r"yes_openings = \[.*\]", f"yes_openings = [{quoted}]", text, count=1)
    )


QUESTION = "Can I return a tent I have used?"


@pytest.mark.default_model
async def test_an_opening_against_the_judge_is_dropped_unseen_then_written_again_or_handed_over(
    shop_en_services, prompts_copy
):
    bot_toml = _opening_judge_on(prompts_copy)

    # As the model writes it, with no second try: its first word is made the "yes" opening.
    _, events = await first_turn(await shop_en_services(second_try=False), QUESTION)
    plain = done_of(events)
    word = plain.text.split()[0]

    # The judge agrees: the reply is shown as written, once the judge has answered.
    _judge_always(prompts_copy, "yes", word)
    _, events = await first_turn(await shop_en_services(), QUESTION)
    agreed = done_of(events)
    assert agreed.second_try is None and agreed.text == plain.text
    assert agreed.held_ms is not None and agreed.held_ms > 0

    # The judge says no: the first reply is dropped unseen and written again after a note.
    _judge_always(prompts_copy, "no", word)
    services = await shop_en_services()
    cid, events = await first_turn(services, QUESTION)
    retried = done_of(events)
    assert retried.second_try is not None and f"opened with {word!r}" in retried.second_try
    assert "".join(e.text for e in events if isinstance(e, Token)) == retried.text  # only the second shown
    assert retried.held_ms == 0.0 and retried.ttft_ms is not None and retried.ttft_ms > 0
    _, messages = await stored(services, cid)
    note = services.assembler.format.tokenizer.decode(messages[-1].token_ids)
    assert note.startswith("<|im_start|>system\nCareful") and "- " in note  # the policy's lines, explicit
    assert messages[-1].text == retried.text
    # The next turn starts with exactly what the model saw, note included: served from the cache.
    following = done_of(await take_turn(services, cid, "And how many days do I have?"))
    assert following.cached_tokens >= retried.prompt_tokens // 32 * 32

    # A bot that hands over on such a contradiction.
    bot_toml.write_text(bot_toml.read_text(encoding="utf-8") + '\n[second_try]\naction = "handoff"\n')
    services = await shop_en_services()
    cid, events = await first_turn(services, QUESTION)
    handed = done_of(events)
    assert handed.handoff and handed.text == services.bots["shop-en"].definition.handoff.message
    conversation, _ = await stored(services, cid)
    assert conversation.handoff_reason == "doubt"
