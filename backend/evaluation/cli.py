"""`prefixdesk eval`, `judges` and `line-matching`: their options, the checks of them, and what
they print and write; the runs themselves are in the modules beside this one."""

import asyncio
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from backend.config import PROJECT_ROOT, Settings, settings_given
from backend.evaluation.ablation import VARIANTS, ablation_table
from backend.evaluation.cases import EVAL_FILE, EvalFileError
from backend.evaluation.eval_report import regressions, table
from backend.evaluation.judge_report import figures_lines, threshold_lines
from backend.evaluation.judge_scores import score_judges
from backend.evaluation.labelled import SETS
from backend.evaluation.prefix_budget import bots_within_prefix_budget
from backend.evaluation.runner import bot_cases, evaluate

DEFAULT_OUTPUT = PROJECT_ROOT / "bench" / "results" / "eval.json"
ABLATION_OUTPUT = PROJECT_ROOT / "bench" / "results" / "ablation.json"
JUDGES_OUTPUT = PROJECT_ROOT / "bench" / "results" / "judges.json"
LINE_MATCHING_OUTPUT = PROJECT_ROOT / "bench" / "results" / "line-matching.json"


@dataclass(frozen=True)
class Gate:
    """Fail when a bot passes fewer cases than in the baseline's results, less the margin."""

    baseline: Path
    margin: int


@dataclass(frozen=True)
class EvalOptions:
    """`prefixdesk eval`'s options."""

    bots: list[str] | None  # None: every bot with eval cases
    url: str | None  # a running app; None: the eval's own
    output: Path
    max_prefix_tokens: int | None
    ablation: bool
    as_served: bool
    gate: Gate | None


def eval_command(
    ctx: typer.Context,
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
    settings = settings_given(ctx.obj)
    options = EvalOptions(
        bots=bot,
        url=url,
        output=output,
        max_prefix_tokens=max_prefix_tokens,
        ablation=ablation,
        as_served=as_served,
        gate=None if baseline is None else Gate(baseline, margin),
    )
    _refuse_running_app(options)
    if options.ablation:
        _ablation(settings, options)
    else:
        _evaluate(settings, options)


def _refuse_running_app(options: EvalOptions) -> None:
    """--ablation and --as-served change the eval's own app; a running app is as it was started."""
    if options.ablation and options.url:
        typer.secho("error: --ablation changes this process's bots, not a running app's", err=True)
        raise typer.Exit(2)
    if options.as_served and options.url:
        typer.secho(
            "error: --as-served sets up the eval's own app; a running app runs as it was started", err=True
        )
        raise typer.Exit(2)


def _evaluate(settings: Settings, options: EvalOptions) -> None:
    cases = _cases(settings, options.bots)
    if options.max_prefix_tokens is not None:
        cases = bots_within_prefix_budget(settings, cases, options.max_prefix_tokens)
    results = asyncio.run(evaluate(settings, options.url, cases, options.as_served))
    report = {
        "model": str(settings.model or "default"),
        "relevant_lines": settings.relevant_lines,
        "as_served": options.as_served,
        "engine_gather_ms": settings.engine_gather_ms,
        "answer_checks": settings.answer_checks,  # "bot": each bot's [answers] checks
        "answer_samples": settings.answer_samples,  # None: each bot's [answers] samples
        "speculative_method": settings.speculative_method,
        "bots": results,
    }
    _write(options.output, report)
    typer.echo(table(results))
    typer.echo(f"\nwritten to {options.output}")
    if options.gate is not None:
        _apply_gate(options.gate, results)


def _apply_gate(gate: Gate, results: dict[str, Any]) -> None:
    worse = regressions(results, json.loads(gate.baseline.read_text(encoding="utf-8"))["bots"], gate.margin)
    if worse:
        typer.secho("answers got worse:\n" + "\n".join(worse), fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    typer.echo(f"no bot is worse than {gate.baseline} (margin {gate.margin} cases)")


def _cases(settings: Settings, bots: list[str] | None) -> dict[str, Any]:
    try:
        return bot_cases(settings.prompts_dir, bots)
    except (EvalFileError, ValueError) as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from error


def _ablation(settings: Settings, options: EvalOptions) -> None:
    cases = _cases(settings, options.bots)
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="prefixdesk-prompts-") as scratch:
        for variant in VARIANTS:
            typer.echo(f"{variant.name} ...")
            changed = variant.change(settings, Path(scratch))
            rows[variant.name] = asyncio.run(evaluate(changed, None, cases, options.as_served))
    report = {
        "model": str(settings.model or "default"),
        "as_served": options.as_served,
        "engine_gather_ms": settings.engine_gather_ms,
        "variants": rows,
    }
    output = ABLATION_OUTPUT if options.output == DEFAULT_OUTPUT else options.output
    _write(output, report)
    typer.echo("\n" + ablation_table(rows) + f"\n\nwritten to {output}")


def _write(output: Path, report: dict[str, Any]) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def judges_command(
    ctx: typer.Context,
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
    names = _labelled_judges(labelled, calibrate)
    settings = settings_given(ctx.obj)
    report = asyncio.run(score_judges(settings, labelled, calibrate, names))
    _write(output, report)
    for line in figures_lines(report, calibrate):
        typer.echo(line)
    if calibrate is not None:
        typer.echo("\nthe chosen thresholds, for prompts/_judges/<judge>.toml (a table per language):")
        for line in threshold_lines(report):
            typer.echo(line)
    typer.echo(f"\nwritten to {output}")


def _labelled_judges(labelled: Path, calibrate: Path | None) -> list[str]:
    """The judges whose sets `labelled` has, all of which `calibrate`, if given, has too."""
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
    return names


def line_matching_command(
    ctx: typer.Context,
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
    from backend.evaluation.line_matching import PAIRS, WITHIN, first_line_hits, first_line_hits_on_cases
    from backend.prompting.definitions import load_bots
    from backend.prompting.reference import MATCHING

    settings = settings_given(ctx.obj)
    labelled = labelled or [PROJECT_ROOT / "tests" / "quality" / "dev", PROJECT_ROOT / "tests" / "quality"]
    sets = {_shown(folder / PAIRS): first_line_hits(folder / PAIRS) for folder in labelled}
    bots = load_bots(settings.prompts_dir)
    cases = {
        slug: first_line_hits_on_cases(bot, load_cases(settings.prompts_dir / slug / EVAL_FILE))
        for slug, bot in bots.items()
        if (settings.prompts_dir / slug / EVAL_FILE).is_file()
    }
    report = {"labelled": sets, "eval_cases": cases}
    _write(output, report)
    columns = [*MATCHING, *(f"{matching} in {count}" for count in WITHIN for matching in MATCHING)]
    typer.echo("| questions of | questions | lines | " + " | ".join(columns) + " |")
    typer.echo("| --- | --- | --- | " + " | ".join("---" for _ in columns) + " |")
    rows = [
        (f"`{path}` {language}", figures)
        for path, languages in sets.items()
        for language, figures in languages.items()
    ]
    rows += [(f"`{slug}` eval cases", figures) for slug, figures in cases.items()]
    for name, figures in rows:
        hits = " | ".join(str(figures.get(column, "-")) for column in columns)
        typer.echo(f"| {name} | {figures['questions']} | {figures['lines']} | {hits} |")
    typer.echo(f"\nwritten to {output}")


def _shown(path: Path) -> str:
    return str(path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path)
