"""`prefixdesk knowledge ...`: a bot's help center, imported from a folder of articles and listed."""

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from backend.config import settings_given
from backend.knowledge.articles import KnowledgeError, load_knowledge
from backend.knowledge.conversion import SOURCE_SUFFIXES
from backend.knowledge.sync import KNOWLEDGE_FOLDER, SyncError, SyncReport, sync_knowledge

knowledge_app = typer.Typer(
    help="A bot's help center (prompts/<bot>/knowledge/): import articles into it, list them.",
    no_args_is_help=True,
)

RELOAD_HINT = (
    "run `prefixdesk prompts reload` to serve the new version "
    "(conversations keep the version they started with)"
)

PromptsDir = Annotated[
    Path | None,
    typer.Option(help="The bots' folder (default: PREFIXDESK_PROMPTS_DIR, or prompts/)."),
]


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


def _bot_folder(slug: str, prompts_dir: Path) -> Path:
    folder = prompts_dir / slug
    if "/" in slug or "\\" in slug or slug.startswith((".", "_")) or not folder.is_dir():
        bots = sorted(
            p.name for p in prompts_dir.glob("*") if p.is_dir() and not p.name.startswith((".", "_"))
        )
        _fail(f"no bot {slug!r} in {prompts_dir} (bots: {', '.join(bots) or 'none'})")
    return folder


@knowledge_app.command("sync")
def sync(
    ctx: typer.Context,
    bot: Annotated[str, typer.Argument(help="The bot's slug (its folder in prompts/).")],
    source: Annotated[
        Path,
        typer.Argument(help=f"A folder of articles ({', '.join(SOURCE_SUFFIXES)}; its top level only)."),
    ],
    prompts_dir: PromptsDir = None,
    dry_run: Annotated[bool, typer.Option(help="Report what would change; write nothing.")] = False,
) -> None:
    """Make the bot's help center the articles in SOURCE: all of them, or, if any fails, none."""
    folder = _bot_folder(bot, prompts_dir or settings_given(ctx.obj).prompts_dir)
    try:
        report = sync_knowledge(folder, source, dry_run=dry_run)
    except (SyncError, OSError) as error:
        _fail(str(error))
    if not report.ok:
        for problem in sorted(report.problems, key=lambda p: p.file.name):
            typer.secho(f"error: {problem.file}: {problem.reason}", fg=typer.colors.RED, err=True)
        typer.echo(f"{len(report.problems)} source(s) failed; {report.folder} is unchanged", err=True)
        raise typer.Exit(1)
    typer.echo(summary(report, dry_run))


def summary(report: SyncReport, dry_run: bool) -> str:
    width = max((len(change.id) for change in report.changes), default=0)
    lines = []
    for change in report.changes:
        line = f"{change.status:<9}  {change.id:<{width}}"
        if change.title is not None:
            line += f"  {change.title}  (from {change.source})"
        lines.append(line.rstrip())
    lines += [f"skipped    {name}" for name in report.skipped]
    counts = ", ".join(
        f"{report.count(status)} {status}" for status in ("added", "changed", "unchanged", "removed")
    )
    verb = "would be" if dry_run else "now"
    lines.append(f"{report.articles} article(s) {verb} in {report.folder} ({counts})")
    if dry_run:
        lines.append("dry run: nothing written")
    elif report.changed:
        lines.append(RELOAD_HINT)
    else:
        lines.append("no article changed; nothing to reload")
    return "\n".join(lines)


@knowledge_app.command("list")
def list_articles(
    ctx: typer.Context,
    bot: Annotated[str, typer.Argument(help="The bot's slug (its folder in prompts/).")],
    prompts_dir: PromptsDir = None,
) -> None:
    """The bot's articles in canonical (id) order: id, title, url and words."""
    folder = _bot_folder(bot, prompts_dir or settings_given(ctx.obj).prompts_dir) / KNOWLEDGE_FOLDER
    try:
        knowledge = load_knowledge(folder)
    except (KnowledgeError, OSError) as error:
        _fail(str(error))
    if not knowledge:
        typer.echo(f"no articles in {folder} (`prefixdesk knowledge sync {bot} <folder>` imports some)")
        return
    rows = [("id", "title", "url", "words")]
    rows += [(a.id, a.title, a.url or "-", str(len(a.text.split()))) for a in knowledge]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)]
        typer.echo("  ".join([*cells, row[3].rjust(5)]))
    words = sum(len(a.text.split()) for a in knowledge)
    typer.echo(f"{len(knowledge)} article(s), {words} words, in {folder}")
