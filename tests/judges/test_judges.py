"""The yes/no judges on the real engine (the tiny model): label reads, caching, the gate's path.

The tiny model's answers mean nothing; what is checked here is the mechanism: vLLM reports the
label tokens' log-probabilities, the fixed few-shot prefix is served from the cache, and a
judge's threshold decides. What the judges are worth is measured on the default model
(tests/quality).
"""

import math
import re
from pathlib import Path

import pytest

from backend.config import PROJECT_ROOT
from backend.evaluation.labelled import calibrated_threshold, judged_items, summary
from backend.judges.yes_no import YesNoJudge
from backend.prompting.chat_format import ChatFormat
from backend.prompting.definitions import load_bot
from backend.prompting.judge_prompts import (
    JUDGES,
    MESSAGE_END_WIDTH,
    JudgePromptError,
    format_item,
    judge_switches,
    load_judge_prompt,
)
from tests.helpers import RecordsRequests, done_of, open_conversation, stored, take_turn

BLOCK = 32


@pytest.fixture(scope="module")
def chat_format(tiny_model_dir: Path) -> ChatFormat:
    from transformers import AutoTokenizer

    return ChatFormat(AutoTokenizer.from_pretrained(tiny_model_dir))


async def test_a_judge_reads_yes_and_no_and_its_prefix_comes_from_the_cache(
    tiny_vllm, chat_format, prompts_copy
):
    bot = load_bot(prompts_copy / "shop-en")
    judge = YesNoJudge(bot.judges["handoff"], chat_format)
    assert len(judge.prefix_ids) > 4 * BLOCK  # instruction and examples: worth caching

    first = await judge.ask(tiny_vllm, "Customer's message: hello", request_id="j-1", cache_salt="judges")
    second = await judge.ask(
        tiny_vllm, "Customer's message: where is my parcel?", request_id="j-2", cache_salt="judges"
    )

    assert 0.0 < first.p_yes < 1.0 and math.isfinite(first.p_yes)
    assert first.answer == (first.p_yes > judge.threshold)
    assert second.cached_tokens >= len(judge.prefix_ids) // BLOCK * BLOCK  # only the item is new
    again = await judge.ask(tiny_vllm, "Customer's message: hello", request_id="j-3", cache_salt="judges")
    assert again.p_yes == pytest.approx(first.p_yes, abs=1e-3)  # greedy, one step: the same answer


async def test_a_bots_threshold_decides_the_handoff_gate(make_services, tiny_vllm, prompts_copy):
    # The real engine answers; a threshold of almost 0 makes any answer a yes.
    handoff = prompts_copy / "_judges" / "handoff.toml"
    handoff.write_text(
        re.sub(r"(?m)^threshold = .*$", "threshold = 0.000001", handoff.read_text(encoding="utf-8"))
    )
    services = await make_services(engine=tiny_vllm, prompts_dir=prompts_copy)
    cid = (await open_conversation(services)).conversation.id

    done = done_of(await take_turn(services, cid, "What colours does the rain jacket come in?"))

    assert done.handoff and done.text == services.bots["shop-en"].definition.handoff.message
    conversation, messages = await stored(services, cid)
    assert conversation.handoff_reason == "customer_request"
    assert [(m.role, m.finish_reason) for m in messages] == [("user", None), ("assistant", "handoff")]


async def test_replies_on_the_real_engine_pass_the_gate_and_are_checked(
    make_services, tiny_vllm, prompts_copy
):
    # A threshold of almost 1 makes any answer a no: the gate lets the reply through.
    handoff = prompts_copy / "_judges" / "handoff.toml"
    handoff.write_text(
        re.sub(r"(?m)^threshold = .*$", "threshold = 0.999999", handoff.read_text(encoding="utf-8"))
    )
    bot_toml = prompts_copy / "shop-en" / "bot.toml"  # every judge on: the checks ask the engine too
    text = bot_toml.read_text(encoding="utf-8")
    bot_toml.write_text(
        text.replace("unanswered = false", "unanswered = true").replace(
            "supported = false", "supported = true"
        )
    )
    services = await make_services(engine=tiny_vllm, prompts_dir=prompts_copy)
    cid = (await open_conversation(services)).conversation.id

    events = await take_turn(services, cid, "How long is the warranty?")

    done = done_of(events)
    assert not done.handoff and done.finish_reason in ("stop", "length")
    assert "".join(e.text for e in events if hasattr(e, "text") and e is not done) == done.text
    assert done.checks_ms is not None and done.checks_ms > 0  # the model's checks ran after the reply
    assert done.held_ms is not None and done.held_ms >= 0


async def test_a_models_own_threshold_decides_for_that_model(
    make_services, tiny_vllm, tiny_model_dir, prompts_copy
):
    # The file's threshold is left as shipped; the one for the model being run, named after
    # its checkpoint directory, makes any answer a yes.
    handoff = prompts_copy / "_judges" / "handoff.toml"
    text, table = handoff.read_text(encoding="utf-8"), "[en.model_thresholds]\n"
    assert table in text  # where the shipped file names the packaged larger model's
    handoff.write_text(text.replace(table, f'{table}"{tiny_model_dir.name}" = 0.000001\n'), encoding="utf-8")
    services = await make_services(engine=tiny_vllm, prompts_dir=prompts_copy)
    cid = (await open_conversation(services)).conversation.id

    done = done_of(await take_turn(services, cid, "What colours does the rain jacket come in?"))

    assert done.handoff
    prompt = load_bot(prompts_copy / "shop-en").judges["handoff"]
    assert prompt.threshold_for(tiny_model_dir.name) == 0.000001
    assert prompt.threshold_for("another-model") == prompt.threshold > 0.1


def test_a_judge_file_gives_other_models_their_own_thresholds_or_names_what_is_wrong(tmp_path):
    path = tmp_path / "handoff.toml"
    base = '[en]\ninstruction = "x"\nthreshold = 0.4\n[[en.example]]\ntext = "a"\nanswer = "yes"\n'
    base += '[[en.example]]\ntext = "b"\nanswer = "no"\n'
    path.write_text(base + '[en.model_thresholds]\n"Qwen2.5-7B-Instruct" = 0.55\n', encoding="utf-8")
    prompt = load_judge_prompt(path, "handoff", "en")
    assert prompt.threshold_for("Qwen2.5-7B-Instruct") == 0.55
    assert prompt.threshold_for("qwen2.5-coder-0.5b-instruct") == 0.4
    for bad in ('"m" = 1.5', '"m" = "high"', '"m" = true'):
        path.write_text(base + f"[en.model_thresholds]\n{bad}\n", encoding="utf-8")
        with pytest.raises(
            JudgePromptError, match="handoff.toml: a threshold must be a number between 0 and 1"
        ):
            load_judge_prompt(path, "handoff", "en")


def test_a_judge_file_that_does_not_parse_names_the_file_and_line(tmp_path):
    broken = tmp_path / "handoff.toml"
    broken.write_text(
        '[en]\ninstruction = "x"\n[[en.example]]\ntext = "hi\nanswer = "no"\n', encoding="utf-8"
    )
    with pytest.raises(JudgePromptError, match=r"handoff.toml.*line 4"):
        load_judge_prompt(broken, "handoff", "en")
    one_sided = tmp_path / "unanswered.toml"
    one_sided.write_text(
        '[en]\ninstruction = "x"\n[[en.example]]\nreply = "hi"\nanswer = "yes"\n', encoding="utf-8"
    )
    with pytest.raises(JudgePromptError, match="answered yes and examples answered no"):
        load_judge_prompt(one_sided, "unanswered", "en")


def test_the_offer_judges_are_on_only_beside_the_handoff_judge():
    assert judge_switches({})["offer_accepted"] and judge_switches({})["offer_made"]
    handoff_off = judge_switches({"handoff": False})
    assert handoff_off == dict.fromkeys(JUDGES, False) | {"line_answers": True}
    assert not judge_switches({"handoff": False, "offer_accepted": True})["offer_accepted"]
    offer_off = judge_switches({"offer_accepted": False})
    assert offer_off["handoff"] and not offer_off["offer_accepted"] and not offer_off["offer_made"]
    with pytest.raises(JudgePromptError, match="offer_accepted"):  # offer_made follows it
        judge_switches({"offer_made": False})


async def test_thresholds_are_chosen_on_a_development_set_from_the_engines_own_answers(
    tiny_vllm, chat_format, tmp_path
):
    # The tiny model's answers mean nothing; what is checked is the path `prefixdesk judges
    # --calibrate` takes: real P(yes) for each labelled item, a threshold chosen on them.
    messages = [("Can I talk to a human?", True), ("Where is my parcel?", False)] * 3
    (tmp_path / "handoff_requests.toml").write_text(
        "".join(
            f'[[message]]\nlanguage = "en"\ntext = "{text}"\nasks_for_human = {str(asks).lower()}\n\n'
            for text, asks in messages
        ),
        encoding="utf-8",
    )
    (tmp_path / "handoff_requests.toml").write_text(  # an answer to the bot's offer, too
        (tmp_path / "handoff_requests.toml").read_text(encoding="utf-8")
        + '[[message]]\nlanguage = "en"\nprevious_reply = "Shall I pass you on?"\ntext = "ok"\n'
        "asks_for_human = true\n",
        encoding="utf-8",
    )
    messages.append(("ok", True))
    judged = await judged_items(tiny_vllm, chat_format, PROJECT_ROOT / "prompts", tmp_path, "handoff")

    english = judged["en"]
    assert [item.truth for item in english.items] == [asks for _, asks in messages]
    assert all(0.0 < item.p_yes < 1.0 for item in english.items)
    assert english.items[0].p_yes == pytest.approx(english.items[2].p_yes, abs=1e-3)  # greedy: repeatable
    for offer_judge in ("p_offer_accepted", "p_offer_made"):
        offers = [getattr(item, offer_judge) for item in english.items]
        assert offers[:-1] == [None] * 6 and offers[-1] is not None and 0.0 < offers[-1] < 1.0
    assert english.offer_threshold is not None and "offer_judges_ms_mean" in english.costs
    chosen = calibrated_threshold(english.items)
    figures = summary(english.items, chosen)
    assert figures["accuracy"] >= summary(english.items, english.threshold)["accuracy"]
    assert (
        english.costs["new_tokens_mean"] < english.costs["prefix_tokens"]
    )  # the examples come from the cache


@pytest.mark.parametrize("before", [False, True])
async def test_the_handoff_judge_runs_beside_the_reply_or_before_it(
    make_services, tiny_vllm, prompts_copy, before
):
    handoff = prompts_copy / "_judges" / "handoff.toml"  # any answer is a no: the reply goes on
    handoff.write_text(
        re.sub(r"(?m)^threshold = .*$", "threshold = 0.999999", handoff.read_text(encoding="utf-8"))
    )
    engine = RecordsRequests(tiny_vllm)
    services = await make_services(engine=engine, prompts_dir=prompts_copy, one_request_at_a_time=before)
    cid = (await open_conversation(services)).conversation.id
    engine.log.clear()

    done = done_of(await take_turn(services, cid, "How long is the warranty?"))

    assert not done.handoff and done.text
    judged, replying = engine.when("end", "handoff-"), engine.when("start", "reply-")
    assert (judged < replying) == before  # by default the reply's prefill does not wait
    if before:
        assert done.held_ms is not None and done.held_ms > 0  # the judge's time is the first token's


async def test_a_handover_decided_before_the_reply_starts_no_reply(make_services, tiny_vllm, prompts_copy):
    handoff = prompts_copy / "_judges" / "handoff.toml"  # any answer is a yes
    handoff.write_text(
        re.sub(r"(?m)^threshold = .*$", "threshold = 0.000001", handoff.read_text(encoding="utf-8"))
    )
    engine = RecordsRequests(tiny_vllm)
    services = await make_services(engine=engine, prompts_dir=prompts_copy, one_request_at_a_time=True)
    cid = (await open_conversation(services)).conversation.id
    engine.log.clear()

    done = done_of(await take_turn(services, cid, "Can I talk to someone?"))

    assert done.handoff
    assert [request_id for _, request_id in engine.log if request_id.startswith("reply-")] == []


@pytest.mark.parametrize("offered", [True, False])
async def test_an_answer_to_the_bot_is_handed_over_when_it_accepts_an_offer_of_a_person(
    make_services, tiny_vllm, prompts_copy, offered
):
    # The handoff judge says no to anything, the offer_accepted judge yes; the offer_made judge
    # says whether the bot's message offered a person. The first message, which answers no bot
    # message, gets a reply; the second is read by all three and handed over only after an offer.
    thresholds = {"handoff": "0.999999", "offer_accepted": "0.000001"}
    thresholds["offer_made"] = "0.000001" if offered else "0.999999"
    for name, threshold in thresholds.items():
        judge = prompts_copy / "_judges" / f"{name}.toml"
        judge.write_text(
            re.sub(r"(?m)^threshold = .*$", f"threshold = {threshold}", judge.read_text(encoding="utf-8"))
        )
    engine = RecordsRequests(tiny_vllm)
    services = await make_services(engine=engine, prompts_dir=prompts_copy)
    cid = (await open_conversation(services)).conversation.id
    engine.log.clear()

    first = done_of(await take_turn(services, cid, "How long is the warranty?"))
    asked_first = {request_id.split("-")[0] for _, request_id in engine.log}
    engine.log.clear()
    second = done_of(await take_turn(services, cid, "ok, do that"))
    asked_second = {request_id.split("-")[0] for _, request_id in engine.log}

    assert not first.handoff and asked_first & {"offer_made", "offer_accepted"} == set()
    assert "handoff" in asked_first
    assert {"handoff", "offer_made", "offer_accepted"} <= asked_second
    assert second.handoff == offered
    conversation, _ = await stored(services, cid)
    assert (conversation.handoff_reason == "customer_request") == offered


def test_the_handoff_judges_read_the_end_of_a_long_previous_message():
    # A long reply would add its every token to the offer judges' prefill on the next turn; what the
    # customer answers is what it asked or offered last.
    answer = "Tents carry a 2-year warranty; zips and poles are repaired free of charge within it. " * 4
    offer = "If that does not answer your question, I can pass you to a colleague. Shall I?"
    item = format_item({"previous_reply": answer + offer, "text": "yes please"}, "en")
    assert item.startswith("Assistant's previous message: …Tents carry")
    assert item.endswith(f"{offer}\nCustomer's message: yes please")
    assert len(item) < MESSAGE_END_WIDTH + 60

    answer_zh = "整机保修3年，压缩机和电机保修10年。保修期内上门维修和更换零件免费。" * 3
    offer_zh = "如果这没有回答您的问题，我可以为您转接人工客服。"
    item_zh = format_item({"previous_reply": answer_zh + offer_zh, "text": "好的"}, "zh")
    assert item_zh.startswith("客服上一条消息: …") and f"{offer_zh}\n顾客消息: 好的" in item_zh
    assert len(item_zh) < len(answer_zh)

    run_on = "and then " * 100  # no sentence ends: the end, from a word's start
    end = format_item({"previous_reply": run_on}, "en").removeprefix("Assistant's previous message: ")
    assert end.startswith("…and then") and end.endswith("and then") and len(end) <= MESSAGE_END_WIDTH + 1
    short = {"previous_reply": "Shall I pass you to a colleague?", "text": "ok"}
    assert (
        format_item(short, "en")
        == "Assistant's previous message: Shall I pass you to a colleague?\nCustomer's message: ok"
    )
