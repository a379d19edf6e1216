"""Eval files: the shipped ones load, a broken one is named with its line, and a reply is judged
by what it must and must not say."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backend.api.rate_limits import MemoryRateLimiter, RateLimits
from backend.config import PROJECT_ROOT, Settings
from backend.errors import TooManyRequests
from backend.evaluation.cases import Case, EvalFileError, judge, load_cases
from backend.evaluation.prefix_budget import bots_within_prefix_budget
from backend.evaluation.runner import bot_cases, eval_app_settings
from backend.evaluation.summary import summarise
from backend.evaluation.transcript import CaseResult, Transcript
from backend.prompting.definitions import copy_with_bots, load_bots, load_worked_examples
from backend.retrieval.terms import terms


def test_every_shipped_bot_has_at_least_25_cases_with_handoffs_among_them():
    for folder in ("shop-en", "appliance-zh"):
        cases = load_cases(PROJECT_ROOT / "prompts" / folder / "eval.toml")
        assert len(cases) >= 25
        assert any(case.handoff for case in cases) and any(len(case.turns) > 1 for case in cases)


def test_a_file_that_does_not_parse_names_the_file_and_line(tmp_path: Path):
    broken = tmp_path / "eval.toml"
    broken.write_text('[[case]]\nname = "ok"\nturns = ["hi"]\nhandoff = false\n\n[[case]]\nname = "oops\n')
    with pytest.raises(EvalFileError, match=r"eval.toml: .*line 7"):
        load_cases(broken)


def test_a_malformed_case_is_named_with_its_line(tmp_path: Path):
    bad = tmp_path / "eval.toml"
    bad.write_text(
        '[[case]]\nname = "a"\nturns = ["hi"]\nhandoff = false\n\n[[case]]\nname = "b"\nturns = "hi"\n'
    )
    with pytest.raises(EvalFileError, match=r"eval.toml, line 6: case 'b' needs turns"):
        load_cases(bad)
    bad.write_text('[[case]]\nname = "a"\nturns = ["hi"]\nexpects = [["x"]]\n')
    with pytest.raises(EvalFileError, match=r"line 1: unknown keys \['expects'\]"):
        load_cases(bad)


def test_the_command_reports_a_broken_file_and_exits_2(tmp_path: Path):
    bot = tmp_path / "prompts" / "some-bot"
    bot.mkdir(parents=True)
    (bot / "eval.toml").write_text('[[case]]\nname = "x"\nturns = [\n')
    done = subprocess.run(
        [sys.executable, "-m", "backend.cli", "eval"],
        env={
            "PATH": "/usr/bin:/bin",
            "PREFIXDESK_PROMPTS_DIR": str(tmp_path / "prompts"),
            "HOME": str(tmp_path),
        },
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "some-bot/eval.toml" in done.stderr and "line" in done.stderr


def test_a_reply_passes_on_every_expected_fact_and_no_forbidden_phrase():
    case = Case("warranty", ("How long?",), expect=(("3 years", "three years"),), forbid=("2 years",))
    assert judge(case, "Backpacks have a three-year... no: three years.", handed_off=False) == []
    assert judge(case, "It is 2 years, not 3 years.", handed_off=False) == ["says '2 years'"]
    assert judge(case, "I don't know.", handed_off=False) == ["missing '3 years'"]
    assert judge(case, "Passing you on.", handed_off=True) == ["handed over to a human"]
    wants_person = Case("person", ("a human please",), handoff=True)
    assert judge(wants_person, "", handed_off=True) == []
    assert judge(wants_person, "Sure! Our policy says...", handed_off=False) == [
        "no handoff, one was expected"
    ]


def test_the_summary_counts_handoffs_and_doubts():
    def result(name, passed, expected, happened, doubt=None):
        case = Case(name, ("hi",), handoff=expected)
        said = Transcript(handed_off=happened, doubt=doubt, prompt_tokens=100, cached_tokens=90)
        return CaseResult(case, said, [] if passed else ["x"])

    summary = summarise(
        [
            result("a", True, True, True),
            result("b", False, False, True),
            result("c", False, True, False, doubt="9 eur is not in the policy"),
            result("d", True, False, False, doubt="4 day is not in the policy"),
        ],
        seconds=3.0,
    )
    assert (summary["cases"], summary["passed"]) == (4, 2)
    assert summary["handoff"] == {"expected": 2, "happened": 2, "precision": 0.5, "recall": 0.5}
    assert summary["doubt"] == {
        "wrong_replies": 1,
        "wrong_flagged": 1,
        "right_replies": 1,
        "right_flagged": 1,
        "withheld": 0,
    }
    assert summary["cached_share"] == 0.9


def test_the_first_token_shown_is_summed_up_also_without_the_replies_replaced():
    said = Transcript()
    said.add_done({"text": "a", "ttft_ms": 100.0, "held_ms": 20.0})
    said.add_done({"text": "b", "ttft_ms": 900.0, "second_try": "said it did not know; quoted a line"})
    said.add_done({"text": "c", "ttft_ms": 200.0, "held_ms": 30.0, "prompt_tokens": 10, "cached_tokens": 8})

    summary = summarise([CaseResult(Case("three turns", ("1", "2", "3")), said, [])], seconds=1.0)

    assert said.reply == "c" and said.second_tries == ["said it did not know; quoted a line"]
    assert summary["first_token_shown_ms_p50"] == 230.0  # of 120, 230 and 900
    assert summary["first_token_shown_as_written_ms_p50"] == 230.0  # of 120 and 230
    assert summary["cached_share"] == 0.8


def with_measuring_bots(tmp_path: Path) -> Path:
    """The shipped prompts and the bots kept only to measure (bench/bots/), in one folder."""
    prompts = tmp_path / "prompts"
    shutil.copytree(PROJECT_ROOT / "prompts", prompts)
    for folder in (PROJECT_ROOT / "bench" / "bots").iterdir():
        shutil.copytree(folder, prompts / folder.name)
    return prompts


def test_no_worked_example_asks_a_question_of_the_eval(tmp_path: Path):
    """The eval measures answers to questions the bot was not shown: a worked example may
    share a policy line with a case, never its question (nor most of its words)."""
    prompts = with_measuring_bots(tmp_path)
    bots = load_bots(prompts)
    assert "tienda-es" in bots and len(load_cases(prompts / "tienda-es" / "eval.toml")) == 50
    for slug, bot in bots.items():
        examples = load_worked_examples(prompts / slug)
        cases = load_cases(prompts / slug / "eval.toml")
        asked = [turn for case in cases for turn in case.turns]
        for example in examples:
            example_terms = set(terms(example.question, bot.language))
            for turn in asked:
                turn_terms = set(terms(turn, bot.language))
                shared = len(example_terms & turn_terms) / max(1, len(example_terms | turn_terms))
                assert shared < 0.5, f"{slug}: the example {example.question!r} asks the case {turn!r}"


def test_the_evals_own_app_loads_only_the_bots_it_evaluates(tmp_path: Path):
    # A help center of 15k tokens takes minutes to warm on a CPU: `eval --bot shop-en` must not wait for it.
    prompts = copy_with_bots(PROJECT_ROOT / "prompts", tmp_path / "prompts", ["shop-en"])
    assert set(load_bots(prompts)) == {"shop-en"}
    assert (prompts / "_judges" / "handoff.toml").is_file()  # what the bots share comes along
    assert (prompts / "shop-en" / "eval.toml").read_bytes() == (
        PROJECT_ROOT / "prompts/shop-en/eval.toml"
    ).read_bytes()


async def test_the_evals_own_app_is_not_cut_short_by_the_widgets_rate_limits(tmp_path: Path):
    # The eval sends a case's messages as fast as the bot answers: on a fast engine, well over
    # the widget requests a minute one address may send, and the messages of one conversation.
    settings = Settings(redis_url="redis://127.0.0.1:6379/0")
    widget_limits = RateLimits(MemoryRateLimiter(), settings)
    with pytest.raises(TooManyRequests):
        for _ in range(settings.rate_limit_requests_per_address + 1):
            await widget_limits.request_from("127.0.0.1")

    own = eval_app_settings(settings, "sqlite+aiosqlite:///x.db", tmp_path, as_served=False)
    eval_limits = RateLimits(MemoryRateLimiter(), own)
    for _ in range(5_000):  # a hundred cases of several turns, in one minute
        await eval_limits.request_from("127.0.0.1")
        await eval_limits.message_to("one-conversation")
    assert own.redis_url is None and own.one_request_at_a_time and own.prompts_dir == tmp_path
    assert not eval_app_settings(settings, "sqlite://", tmp_path, as_served=True).one_request_at_a_time


def test_the_gate_can_leave_out_a_bot_whose_prefix_takes_minutes_to_prefill(default_model_dir, capsys):
    settings = Settings(model=default_model_dir, prompts_dir=PROJECT_ROOT / "prompts")
    cases = bot_cases(settings.prompts_dir, None)
    kept = bots_within_prefix_budget(settings, cases, 4096)
    # The help center of tallybook-en sits in its prefix on the default model's context window.
    assert set(kept) == set(cases) - {"tallybook-en"}
    assert "tallybook-en: skipped, its fixed prefix is" in capsys.readouterr().out
    assert bots_within_prefix_budget(settings, cases, 10**6) == cases


def test_a_polarity_that_is_not_yes_or_no_is_named(tmp_path: Path):
    bad = tmp_path / "eval.toml"
    bad.write_text('[[case]]\nname = "a"\nturns = ["Can I?"]\nexpect = [["no"]]\npolarity = "maybe"\n')
    with pytest.raises(EvalFileError, match=r"line 1: case 'a': polarity is \"yes\" or \"no\", not 'maybe'"):
        load_cases(bad)


def test_a_reply_held_until_checked_is_shown_when_its_done_event_says():
    said = Transcript()
    said.add_done({"text": "a", "ttft_ms": 100.0, "total_ms": 700.0, "held_ms": 0.0, "shown_ms": 712.5})
    said.add_done({"text": "b", "ttft_ms": 100.0, "held_ms": 20.0})  # streamed: its first token
    assert said.timings["shown_ms"] == [712.5, 120.0]


def test_the_time_to_a_reply_shown_is_the_clients_when_it_saw_one():
    # From the message sent to the first token event, as the eval's client received it: the
    # request, the gates, the writing and the checks, whatever the app's own clocks say.
    said = Transcript()
    said.add_done({"text": "a", "ttft_ms": 100.0, "total_ms": 700.0, "shown_ms": 712.5}, shown_ms=750.25)
    assert said.timings["shown_ms"] == [750.2]
