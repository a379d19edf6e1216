"""`prefixdesk prompts ...`: the bots in prompts/, checked before they reach the cache."""

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Annotated

import httpx
import typer

from backend.authoring.checks import CheckError, CheckResult, check_prompts
from backend.authoring.rendering import RenderSettings
from backend.config import settings_given
from backend.engine.model_store import ModelError, resolve_model_dir
from backend.languages import APP_LANGUAGES, primary_language
from backend.prompting.definitions import bot_folders
from backend.prompting.judge_prompts import in_english

prompts_app = typer.Typer(
    help="The bots in prompts/: check what they cost and what would break their cache.",
    no_args_is_help=True,
)


@prompts_app.command("check")
def check(ctx: typer.Context) -> None:
    """Render every bot as the engine will; exit 1 on anything that would defeat the prefix cache."""
    settings = settings_given(ctx.obj)
    render_settings = RenderSettings.of(settings)
    try:
        model_dir = resolve_model_dir(settings.model, settings.cache_dir)
        result = check_prompts(settings.prompts_dir, model_dir, settings.block_size, render_settings)
    except (ModelError, CheckError) as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from error
    typer.echo(f"bots in {settings.prompts_dir}, model {model_dir}\n")
    typer.echo(usage_table(result, settings.block_size))
    for line in knowledge_lines(result) + language_lines(settings.prompts_dir):
        typer.echo(line)
    if result.ok:
        typer.echo("\nno cache-busters found")
        return
    problems = [("(model)", problem) for problem in result.model_problems]
    problems += [(report.slug, problem) for report in result.bots for problem in report.problems]
    typer.secho(f"\n{len(problems)} problem(s):", fg=typer.colors.RED)
    for bot, problem in problems:
        typer.echo(f"{bot}/{problem.file}: {problem.kind}: {problem.detail}")
    raise typer.Exit(1)


@prompts_app.command("reload")
def reload(
    url: Annotated[str, typer.Option(help="The running app.")] = "http://127.0.0.1:8000",
    token: Annotated[str | None, typer.Option(help="An admin API token [env: PREFIXDESK_API_TOKEN]")] = None,
    evaluate: Annotated[
        bool,
        typer.Option(
            "--eval",
            help="First run `prefixdesk eval` on the running app and on prompts/ here; "
            "refuse if a bot passes fewer cases.",
        ),
    ] = False,
    bots: Annotated[
        list[str] | None, typer.Option("--bot", help="With --eval: only this bot (repeatable).")
    ] = None,
) -> None:
    """Make the running app (every process of it) read prompts/ again, warming changed prefixes first."""
    token = token or os.environ.get("PREFIXDESK_API_TOKEN")
    if not token:
        typer.secho(
            "error: pass --token or set PREFIXDESK_API_TOKEN (an admin token)", fg=typer.colors.RED, err=True
        )
        raise typer.Exit(1)
    if evaluate:
        worse = worse_than_running(url, bots)
        if worse:
            typer.secho(
                "refused: the changed prompts answer worse than the running ones:",
                fg=typer.colors.RED,
                err=True,
            )
            typer.echo("\n".join(worse), err=True)
            raise typer.Exit(1)
    try:
        response = httpx.post(
            f"{url.rstrip('/')}/api/v1/admin/prompts/reload",
            headers={"Authorization": f"Bearer {token}"},
            timeout=300,
        )
    except httpx.HTTPError as error:
        typer.secho(f"error: cannot reach {url}: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from error
    if response.is_error:
        detail = response.json().get("detail", response.text) if response.content else response.reason_phrase
        typer.secho(f"error: {response.status_code}: {detail}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    for slug, version in response.json()["bots"].items():
        state = "new version, warmed" if version["changed"] else "unchanged"
        typer.echo(
            f"{slug}\tversion {version['prompt_version_id']}\t{version['prefix_tokens']} tokens\t{state}"
        )


def knowledge_lines(result: CheckResult) -> list[str]:
    """Per bot with a help center: its tokens against the budget, and where its articles go."""
    lines = []
    for report in result.bots:
        knowledge = report.usage.knowledge if report.usage else None
        if knowledge is None:
            continue
        where = (
            "in the fixed prefix"
            if knowledge.in_prefix
            else "over budget: the articles that match each question come beside it, once each"
        )
        budget = "no limit" if knowledge.budget is None else f"{knowledge.budget:,}"
        lines.append(
            f"\n{report.slug}: help center of {knowledge.articles} articles, "
            f"{knowledge.tokens:,} tokens (budget {budget}): {where}"
        )
    return lines


def language_lines(prompts_dir: Path) -> list[str]:
    """Per bot in another language than English: the judge files it is asked or speaks in English,
    and the app's words it lacks."""
    lines = []
    for folder in bot_folders(prompts_dir):
        try:
            meta = tomllib.loads((folder / "bot.toml").read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            continue  # a problem the check reports above
        language = str(meta.get("language", "en"))
        english = in_english(folder, language)
        if english.asked:
            files = ", ".join(f"{name}.toml" for name in english.asked)
            lines.append(
                f"\n{folder.name}: no [{language}] instruction in {files}: the model is asked in English "
                f"(a copy in prompts/{folder.name}/judges/ with a [{language}] table asks in its language)"
            )
        if english.said:
            files = ", ".join(f"{name}.toml" for name in english.said)
            lines.append(f"\n{folder.name}: no [{language}] table in {files}: its words are said in English")
        if primary_language(language) not in APP_LANGUAGES:
            lines.append(
                f"\n{folder.name}: the app has no words in [{language}] (it has {', '.join(APP_LANGUAGES)}): "
                "the widget's labels, the title of a quoted policy and, unless bot.toml's [handoff] "
                "sets a message, the handoff message are in English"
            )
    return lines


def usage_table(result: CheckResult, block_size: int) -> str:
    header = ("bot", "prefix tokens", "in full blocks", "first turn tokens", "from cache", "share")
    rows = [header]
    for report in result.bots:
        usage = report.usage
        if usage is None:
            rows.append((report.slug, "-", "-", "-", "-", "-"))
            continue
        rows.append(
            (
                report.slug,
                str(usage.prefix_tokens),
                str(usage.prefix_cached),
                str(usage.first_turn_tokens),
                str(usage.first_turn_cached),
                f"{usage.first_turn_share:.1%}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(
            [row[0].ljust(widths[0]), *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True))]
        )
        for row in rows
    ]
    notes = (
        f"in full blocks     floor(prefix / {block_size}) * {block_size}: the blocks the prefix fills,"
        " cached by the warm-up",
        "first turn tokens  prefix + a typical customer question + the generation prompt",
        f"from cache         min(in full blocks, cacheable_tokens(first turn, {block_size})):"
        " the engine computes",
        "                   a prompt's last token itself, so a prompt never hits in full",
        "share              from cache / first turn tokens",
    )
    return "\n".join([*lines, "", *notes])


def worse_than_running(url: str, bots: list[str] | None) -> list[str]:
    """The bots whose eval cases pass less often on prompts/ here than on the running app."""
    with tempfile.TemporaryDirectory(prefix="prefixdesk-reload-") as folder:
        running, changed = Path(folder) / "running.json", Path(folder) / "changed.json"
        only = [arg for slug in bots or () for arg in ("--bot", slug)]
        for target, extra in ((running, ["--url", url]), (changed, [])):
            arguments = ["eval", "--output", str(target), *only, *extra]
            typer.echo(f"evaluating {'the running app' if extra else 'prompts/ here'} ...")
            command = [sys.executable, "-m", "backend.cli", *arguments]
            if subprocess.run(command, check=False).returncode != 0:  # noqa: S603 (our own command)
                return [f"  `prefixdesk {' '.join(arguments)}` failed"]
        before = json.loads(running.read_text(encoding="utf-8"))["bots"]
        after = json.loads(changed.read_text(encoding="utf-8"))["bots"]
    return [
        f"  {slug}: {result['passed']}/{result['cases']} passed, running version {before[slug]['passed']}"
        for slug, result in after.items()
        if slug in before and result["passed"] < before[slug]["passed"]
    ]
