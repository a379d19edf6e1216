"""Import a folder of Markdown, text and HTML articles into a bot's help center, all or nothing.

`sync_knowledge` reads the top level of a source folder, converts each file to an article
(`<id>.md` with `title` and, when there is one, `url` front matter), writes them all to a
staging folder beside `prompts/<bot>/knowledge/`, and reads every one back with
`parse_article`. Only when every source converts and validates is the staging folder swapped
in; otherwise the help center is left exactly as it was and each failing file is reported.
"""

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from backend.knowledge.articles import ARTICLE_SUFFIX, Article, KnowledgeError, parse_article
from backend.knowledge.conversion import (
    SOURCE_SUFFIXES,
    SourceError,
    article_id,
    convert_source,
    render_markdown,
)

KNOWLEDGE_FOLDER = "knowledge"

Status = Literal["added", "changed", "unchanged", "removed"]


class SyncError(ValueError):
    """The sync cannot start at all (no bot folder, no source folder, no articles)."""


@dataclass(frozen=True)
class Problem:
    file: Path
    reason: str


@dataclass(frozen=True)
class Change:
    status: Status
    id: str  # for a removed file that was not an article: its file name
    title: str | None = None
    source: str | None = None  # the source file's name


@dataclass
class SyncReport:
    folder: Path  # the bot's knowledge folder
    changes: list[Change] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # source file names, with why
    problems: list[Problem] = field(default_factory=list)
    written: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def articles(self) -> int:
        return sum(1 for change in self.changes if change.status != "removed")

    @property
    def changed(self) -> bool:
        return any(change.status != "unchanged" for change in self.changes)

    def count(self, status: Status) -> int:
        return sum(1 for change in self.changes if change.status == status)


def source_files(source: Path) -> tuple[list[Path], list[str]]:
    """The top-level source files in name order, and what is skipped (hidden files silently)."""
    sources: list[Path] = []
    skipped: list[str] = []
    for path in sorted(source.iterdir(), key=lambda p: p.name):
        if path.name.startswith("."):
            continue
        if path.is_dir():
            skipped.append(f"{path.name}/ (sub-folders are not read)")
        elif path.suffix.lower() in SOURCE_SUFFIXES:
            sources.append(path)
        else:
            skipped.append(f"{path.name} (not {', '.join(SOURCE_SUFFIXES)})")
    return sources, skipped


def sync_knowledge(bot_folder: Path, source: Path, *, dry_run: bool = False) -> SyncReport:
    """Replace `bot_folder/knowledge/` with the articles in `source`, or change nothing and
    report every source that fails. With `dry_run`, report what would change and write nothing."""
    if not bot_folder.is_dir():
        raise SyncError(f"{bot_folder}: no such bot folder")
    if not source.is_dir():
        raise SyncError(f"{source}: no such source folder")
    knowledge = bot_folder / KNOWLEDGE_FOLDER
    if knowledge.exists() and not knowledge.is_dir():
        raise SyncError(f"{knowledge}: not a folder")
    sources, skipped = source_files(source)
    if not sources:
        raise SyncError(
            f"{source}: no articles ({', '.join(SOURCE_SUFFIXES)}) at its top level "
            f"(to remove the help center, delete {knowledge})"
        )
    report = SyncReport(knowledge, skipped=skipped)
    ids = _ids(sources, report)
    with _staging(bot_folder, dry_run) as staging:
        built = _build(sources, ids, staging, report)
        if not report.ok:
            return report
        report.changes = _changes(knowledge, built)
        if not dry_run:
            _swap_in(staging, knowledge, bot_folder)
            report.written = True
    return report


def _ids(sources: list[Path], report: SyncReport) -> dict[Path, str]:
    ids: dict[Path, str] = {}
    for path in sources:
        try:
            ids[path] = article_id(path)
        except SourceError as error:
            report.problems.append(Problem(path, str(error)))
    by_id: dict[str, list[Path]] = {}
    for path, slug in ids.items():
        by_id.setdefault(slug, []).append(path)
    for slug, paths in by_id.items():
        for path in paths if len(paths) > 1 else ():
            others = ", ".join(str(other) for other in paths if other != path)
            report.problems.append(Problem(path, f"its article id {slug!r} is also that of {others}"))
    return {path: slug for path, slug in ids.items() if len(by_id[slug]) == 1}


def _build(
    sources: list[Path], ids: dict[Path, str], staging: Path, report: SyncReport
) -> dict[str, tuple[Article, str]]:
    """Each source converted, written to `staging` and read back: by id, its article and source."""
    built: dict[str, tuple[Article, str]] = {}
    for path in sources:
        if path not in ids:
            continue  # its id is already reported
        target = staging / f"{ids[path]}{ARTICLE_SUFFIX}"
        try:
            target.write_text(render_markdown(convert_source(path)), encoding="utf-8")
            article = parse_article(target)
        except SourceError as error:
            report.problems.append(Problem(path, str(error)))
        except KnowledgeError as error:  # its message names the staged file; name the source
            report.problems.append(Problem(path, str(error).removeprefix(f"{target}: ")))
        else:
            built[article.id] = (article, path.name)
    return built


def _changes(knowledge: Path, built: dict[str, tuple[Article, str]]) -> list[Change]:
    old = _old_articles(knowledge)
    changes: list[Change] = []
    for slug in sorted(built):
        article, source = built[slug]
        if slug not in old:
            status: Status = "added"
        else:
            status = "unchanged" if old[slug] == article else "changed"
        changes.append(Change(status, slug, article.title, source))
    changes += [Change("removed", name) for name in sorted(old) if name not in built]
    return changes


def _old_articles(knowledge: Path) -> dict[str, Article | None]:
    """What is in the current knowledge folder: articles by id (None if one does not parse);
    anything else by its file name."""
    if not knowledge.is_dir():
        return {}
    old: dict[str, Article | None] = {}
    for path in knowledge.iterdir():
        name = path.name.removesuffix(ARTICLE_SUFFIX) if path.suffix == ARTICLE_SUFFIX else path.name
        try:
            old[name] = parse_article(path) if path.is_file() else None
        except KnowledgeError:
            old[name] = None
    return old


@contextmanager
def _staging(bot_folder: Path, dry_run: bool) -> Iterator[Path]:
    """A new, empty folder: beside the knowledge folder (so it can be renamed into its place),
    or, for a dry run, in the system's temporary folder. Gone afterwards unless swapped in."""
    staging = Path(tempfile.mkdtemp(prefix=".knowledge-new-", dir=None if dry_run else bot_folder))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _swap_in(staging: Path, knowledge: Path, bot_folder: Path) -> None:
    """Rename the old folder away, the new one in, then delete the old: a reader sees the whole
    old help center or the whole new one, never a mix (nor, between the two renames, any
    folder at all, which reads as no help center)."""
    mode = (knowledge if knowledge.is_dir() else bot_folder).stat().st_mode & 0o777
    staging.chmod(mode)  # mkdtemp makes it private to its owner
    old = Path(tempfile.mkdtemp(prefix=".knowledge-old-", dir=bot_folder))
    old.rmdir()  # only a free name is wanted
    if knowledge.exists():
        os.rename(knowledge, old)
    try:
        os.rename(staging, knowledge)
    except OSError:
        if old.exists():
            os.rename(old, knowledge)
        raise
    shutil.rmtree(old, ignore_errors=True)
