"""`prefixdesk eval`: the table per bot, the JSON file, and the gate against a baseline."""

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from backend.authoring.checks import load_tokenizer, render_bots, server_knowledge_budget
from backend.config import PROJECT_ROOT, Settings, get_settings
from backend.engine.model_store import DEFAULT_MODEL, resolve_model_dir
from backend.evaluation.ablation import VARIANTS, ablation_table
from backend.evaluation.cases import EVAL_FILE, EvalFileError
from backend.evaluation.runner import app_client, bot_cases, evaluate_bot

DEFAULT_OUTPUT = PROJECT_ROOT / "bench" / "results" / "eval.json"
ABLATION_OUTPUT = PROJECT_ROOT / "bench" / "results" / "ablation.json"
JUDGES_OUTPUT = PROJECT_ROOT / "bench" / "results" / "judges.json"
LINE_MATCHING_OUTPUT = PROJECT_ROOT / "bench" / "results" / "line-matching.json"


def eval_command(
    bot: Annotated[list[str] | None, typer.Option(help="Only this bot (repeatable).")] = None,
    url: Annotated[
        str | None, typer.Option(help="A running app to evaluate, instead of one of its own.")
    ] = None,
    output: Annotated[Path, typer.Option(help="Where to write the results.")] = DEFAULT_OUTPUT,
    baseline: Annotated[
        Path | None, typer.Option(help="Fail if a bot passes fewer cases than here, less the margin.")
    ] = None,
    margin: Annotated[int, typer.Option(help="Cases a bot may lose against the baseline.")] = 2,
    max_prefix_tokens: Annotated[
        int | None,
        typer.Option(
            help="Skip the bots whose fixed prefix is longer (its prefill alone takes minutes on a "
            "CPU); they are named, and left out of the output and the gate."
        ),
    ] = None,
    ablation: Annotated[
        bool,
        typer.Option(
            help="Run the eval once as shipped and once with each technique off; "
            f"write the table's figures (default output {ABLATION_OUTPUT.relative_to(PROJECT_ROOT)})."
        ),
    ] = False,
    as_served: Annotated[
        bool,
        typer.Option(
            help="Run the turn's engine requests side by side, as `serve` does, instead of one at a "
            "time: the customer's timings, a score that may move a case or two between runs."
        ),
    ] = False,
) -> None:
    """Run every bot's eval cases (prompts/<bot>/eval.toml) through the app and score the replies."""
    settings = get_settings()
    if ablation and url:
        typer.secho("error: --ablation changes this process's bots, not a running app's", err=True)
        raise typer.Exit(2)
    if as_served and url:
        typer.secho(
            "error: --as-served sets up the eval's own app; a running app runs as it was started", err=True
        )
        raise typer.Exit(2)
    if ablation:
        _ablation(settings, bot, ABLATION_OUTPUT if output == DEFAULT_OUTPUT else output, as_served)
        return
    cases = _cases(settings, bot)
    if max_prefix_tokens is not None:
        cases = bots_within_prefix_budget(settings, cases, max_prefix_tokens)
    results = asyncio.run(_evaluate(settings, url, cases, as_served))
    report = {
        "model": str(settings.model or "default"),
        "relevant_lines": settings.relevant_lines,
        "as_served": as_served,
        "engine_gather_ms": settings.engine_gather_ms,
        "bots": results,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    typer.echo(table(results))
    typer.echo(f"\nwritten to {output}")
    if baseline is not None:
        worse = regressions(results, json.loads(baseline.read_text(encoding="utf-8"))["bots"], margin)
        if worse:
            typer.secho("answers got worse:\n" + "\n".join(worse), fg=typer.colors.RED, err=True)
            raise typer.Exit(1)
        typer.echo(f"no bot is worse than {baseline} (margin {margin} cases)")


def _cases(settings: Settings, bots: list[str] | None) -> dict[str, Any]:
    try:
        return bot_cases(settings.prompts_dir, bots)
    except (EvalFileError, ValueError) as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from error


def bots_within_prefix_budget(settings: Settings, cases: dict[str, Any], budget: int) -> dict[str, Any]:
    """The bots' cases but those whose fixed prefix, as the server renders it, exceeds `budget`."""
    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    rendered = render_bots(
        settings.prompts_dir, load_tokenizer(model_dir), server_knowledge_budget(model_dir)
    )
    kept = {}
    for slug, bot_cases_ in cases.items():
        tokens = len(rendered["bots"][slug].get("prefix_ids", []))
        if tokens > budget:
            typer.echo(f"{slug}: skipped, its fixed prefix is {tokens} tokens (--max-prefix-tokens {budget})")
        else:
            kept[slug] = bot_cases_
    return kept


def _ablation(settings: Settings, bots: list[str] | None, output: Path, as_served: bool) -> None:
    cases = _cases(settings, bots)
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="prefixdesk-prompts-") as scratch:
        for variant in VARIANTS:
            typer.echo(f"{variant.name} ...")
            changed = variant.change(settings, Path(scratch))
            rows[variant.name] = asyncio.run(_evaluate(changed, None, cases, as_served))
    report = {
        "model": str(settings.model or "default"),
        "as_served": as_served,
        "engine_gather_ms": settings.engine_gather_ms,
        "variants": rows,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    typer.echo("\n" + ablation_table(rows) + f"\n\nwritten to {output}")


async def _evaluate(
    settings: Settings, url: str | None, cases: dict[str, Any], as_served: bool = False
) -> dict[str, Any]:
    async with app_client(settings, url, cases.keys(), as_served=as_served) as client:
        return {slug: await evaluate_bot(client, slug, bot_cases_) for slug, bot_cases_ in cases.items()}


def regressions(results: dict[str, Any], baseline: dict[str, Any], margin: int) -> list[str]:
    worse = []
    for slug, result in results.items():
        before = baseline.get(slug)
        if before is not None and result["passed"] < before["passed"] - margin:
            worse.append(
                f"  {slug}: {result['passed']}/{result['cases']} passed, baseline {before['passed']}"
            )
    return worse


def table(results: dict[str, Any]) -> str:
    lines = []
    for slug, result in results.items():
        handoff, doubt = result["handoff"], result["doubt"]
        lines += [
            f"\n{slug}: {result['passed']}/{result['cases']} passed in {result['seconds']} s, "
            f"cached share {result['cached_share']}",
            f"  handoff precision {handoff['precision']} recall {handoff['recall']} "
            f"({handoff['happened']} handed over, {handoff['expected']} expected)",
            f"  doubt flags: {doubt['wrong_flagged']}/{doubt['wrong_replies']} wrong replies, "
            f"{doubt['right_flagged']}/{doubt['right_replies']} right ones",
            f"  first token after {result['ttft_ms_p50']} ms, shown after "
            f"{result['first_token_shown_ms_p50']} ms "
            f"({result.get('first_token_shown_as_written_ms_p50')} ms for the replies shown as written; "
            "p50s); held for the gate and the opening check "
            f"{result['first_token_held_ms_mean']} ms, checks after the reply "
            f"{result['checks_ms_mean']} ms (means)",
            f"  second tries: {result['second_tries']['cases']} cases, "
            f"{result['second_tries']['passed']} of them passed",
        ]
        sources = result.get("sources", {})
        if sources.get("cases_naming_sources"):
            lines.append(
                f"  sources: {sources['cited_an_answering_article']}/{sources['cases_naming_sources']} "
                f"replies named an article that answers the case ({sources['cited_only_others']} only "
                f"others, {sources['cited_none']} none)"
            )
        for failure in result["failures"]:
            reply = failure["reply"].replace("\n", " ")[:120]
            lines.append(f"  FAIL {failure['case']}: {'; '.join(failure['reasons'])} | {reply}")
    return "\n".join(lines)


def judges_command(
    labelled: Annotated[Path, typer.Option(help="The folder of labelled sets.")] = PROJECT_ROOT
    / "tests"
    / "quality",
    output: Annotated[Path, typer.Option(help="Where to write the results.")] = JUDGES_OUTPUT,
    calibrate: Annotated[
        Path | None,
        typer.Option(
            help="A folder of development sets: choose each judge's threshold per language on it "
            "(most items right), then score the labelled sets at it. For a new model or judge prompt."
        ),
    ] = None,
) -> None:
    """Score the yes/no judges (prompts/_judges) on labelled sets: precision, recall, cost."""
    from backend.evaluation.labelled import SETS

    # A folder may label only some judges' items (a team's own handoff messages, say).
    names = [name for name, (file, *_) in SETS.items() if (labelled / file).is_file()]
    if not names:
        files = ", ".join(file for file, *_ in SETS.values())
        raise typer.BadParameter(f"{labelled} holds none of {files}", param_hint="--labelled")
    if calibrate is not None and (
        missing := [SETS[n][0] for n in names if not (calibrate / SETS[n][0]).is_file()]
    ):
        raise typer.BadParameter(
            f"{calibrate} lacks {', '.join(missing)}, which {labelled} has", param_hint="--calibrate"
        )
    settings = get_settings()
    report = asyncio.run(_score_judges(settings, labelled, calibrate, names))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for judge, languages in report["judges"].items():
        for language, figures in languages.items():
            typer.echo(
                f"{judge:<11} {language}  threshold {figures['threshold']}  "
                f"precision {figures['precision']}  recall {figures['recall']}  "
                f"accuracy {figures['accuracy']}  ({figures['items']} items, "
                f"{figures['judge_ms_mean']} ms, {figures['new_tokens_mean']} new tokens each, "
                f"prefix {figures['prefix_tokens']})"
            )
            if "own_threshold" in figures:
                own = figures["own_threshold"]
                typer.echo(
                    f"    chosen on {calibrate}; at the judge's own threshold {own['threshold']}: precision "
                    f"{own['precision']}  recall {own['recall']}  accuracy {own['accuracy']}"
                )
            if "offer_accepted_threshold" in figures:
                offer, offer_ms = figures["offer_accepted_threshold"], figures.get("offer_judges_ms_mean")
                made = figures.get("offer_made_threshold")
                typer.echo(
                    f"    with offer_made (threshold {made}) and offer_accepted (threshold {offer}) "
                    f"beside it, {offer_ms} ms for both"
                )
                if "handoff_judge_alone" in figures:
                    alone = figures["handoff_judge_alone"]
                    typer.echo(
                        f"    the handoff judge alone: precision {alone['precision']}  "
                        f"recall {alone['recall']}  accuracy {alone['accuracy']}"
                    )
            for error in figures["errors"]:
                item = error["item"].replace("\n", " | ")[:150]
                offer = "".join(
                    f", {name} {error[f'p_{name}']}"
                    for name in ("offer_made", "offer_accepted")
                    if f"p_{name}" in error
                )
                typer.echo(f"    expected {error['expected']} (p_yes {error['p_yes']}{offer}): {item}")
    if calibrate is not None:
        typer.echo("\nthe chosen thresholds, for prompts/_judges/<judge>.toml (a table per language):")
        name = report["model_name"]
        for judge, languages in report["judges"].items():
            for language, figures in languages.items():
                chosen = [(judge, figures["threshold"])]
                if "offer_accepted_threshold" in figures:
                    chosen.append(("offer_accepted", figures["offer_accepted_threshold"]))
                for file, threshold in chosen:
                    if name == DEFAULT_MODEL.name:
                        typer.echo(f"  {file}.toml [{language}] threshold = {threshold}")
                    else:
                        typer.echo(f'  {file}.toml [{language}.model_thresholds] "{name}" = {threshold}')
    typer.echo(f"\nwritten to {output}")


def line_matching_command(
    labelled: Annotated[
        list[Path] | None,
        typer.Option(
            help="Folders holding a line_answers.toml set (default: tests/quality/dev and tests/quality)."
        ),
    ] = None,
    output: Annotated[Path, typer.Option(help="Where to write the results.")] = LINE_MATCHING_OUTPUT,
) -> None:
    """How often the bots' matching puts first the policy line that answers a question, by
    shared words alone and by words and meaning: on the labelled line_answers sets, and on
    each bot's eval cases (no engine)."""
    from backend.evaluation.cases import load_cases
    from backend.evaluation.line_matching import PAIRS, first_line_hits, first_line_hits_on_cases
    from backend.prompting.definitions import load_bots
    from backend.prompting.reference import MATCHING

    settings = get_settings()
    labelled = labelled or [PROJECT_ROOT / "tests" / "quality" / "dev", PROJECT_ROOT / "tests" / "quality"]
    sets = {_shown(folder / PAIRS): first_line_hits(folder / PAIRS) for folder in labelled}
    bots = load_bots(settings.prompts_dir)
    cases = {
        slug: first_line_hits_on_cases(bot, load_cases(settings.prompts_dir / slug / EVAL_FILE))
        for slug, bot in bots.items()
        if (settings.prompts_dir / slug / EVAL_FILE).is_file()
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    report = {"labelled": sets, "eval_cases": cases}
    output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    typer.echo("| questions of | questions | lines | " + " | ".join(MATCHING) + " |")
    typer.echo("| --- | --- | --- | " + " | ".join("---" for _ in MATCHING) + " |")
    rows = [
        (f"`{path}` {language}", figures)
        for path, languages in sets.items()
        for language, figures in languages.items()
    ]
    rows += [(f"`{slug}` eval cases", figures) for slug, figures in cases.items()]
    for name, figures in rows:
        hits = " | ".join(str(figures[matching]) for matching in MATCHING)
        typer.echo(f"| {name} | {figures['questions']} | {figures['lines']} | {hits} |")
    typer.echo(f"\nwritten to {output}")


def _shown(path: Path) -> str:
    return str(path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path)


async def _score_judges(
    settings: Settings, labelled: Path, development: Path | None, names: list[str]
) -> dict[str, Any]:
    from backend.engine.factory import start_engine
    from backend.engine.model_store import resolve_model_dir
    from backend.evaluation.labelled import (
        calibrated_offer_threshold,
        calibrated_threshold,
        judged_items,
        summary,
    )
    from backend.prompting.chat_format import ChatFormat
    from backend.services import load_tokenizer

    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    chat_format = ChatFormat(await asyncio.to_thread(load_tokenizer, model_dir))
    engine = await start_engine(settings, model_dir, None)
    judges: dict[str, Any] = {}
    try:
        for name in names:
            held_out = await judged_items(engine, chat_format, settings.prompts_dir, labelled, name)
            chosen = {lang: (judged.threshold, judged.offer_threshold) for lang, judged in held_out.items()}
            if development is not None:
                dev = await judged_items(engine, chat_format, settings.prompts_dir, development, name)
                for language in held_out:
                    threshold = calibrated_threshold(dev[language].items)
                    chosen[language] = (threshold, calibrated_offer_threshold(dev[language].items, threshold))
            judges[name] = {}
            for language, judged in held_out.items():
                figures = summary(judged.items, *chosen[language]) | judged.costs
                if chosen[language][1] is not None:  # what the handoff judge alone would say
                    alone = summary(judged.items, chosen[language][0])
                    kept = ("precision", "recall", "accuracy")
                    figures["handoff_judge_alone"] = {key: alone[key] for key in kept}
                if development is not None:
                    own = summary(judged.items, judged.threshold, judged.offer_threshold)
                    figures["own_threshold"] = {
                        key: own[key] for key in ("threshold", "precision", "recall", "accuracy")
                    }
                judges[name][language] = figures
    finally:
        engine.shutdown()
    return {
        "model": str(settings.model or "default"),
        "model_name": chat_format.model_name,
        "calibrated_on": str(development) if development else None,
        "judges": judges,
    }
