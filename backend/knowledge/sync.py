"""Import a folder of Markdown, text and HTML articles into a bot's help center, all or nothing.

`sync_knowledge` reads the top level of a source folder, converts each file to an article
(`<id>.md` with `title` and, when there is one, `url` front matter), writes them all to a
staging folder beside `prompts/<bot>/knowledge/`, and reads every one back with
`parse_article`. Only when every source converts and validates is the staging folder swapped
in; otherwise the help center is left exactly as it was and each failing file is reported.
"""

import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import frontmatter
import yaml
from bs4 import BeautifulSoup, Tag
from markdownify import ATX, MarkdownConverter

from backend.knowledge.articles import (
    ARTICLE_ID,
    ARTICLE_SUFFIX,
    Article,
    KnowledgeError,
    normalise_text,
    parse_article,
)

KNOWLEDGE_FOLDER = "knowledge"
MARKDOWN_SUFFIXES = (".md", ".markdown")
TEXT_SUFFIXES = (".txt",)
HTML_SUFFIXES = (".html", ".htm")
SOURCE_SUFFIXES = MARKDOWN_SUFFIXES + TEXT_SUFFIXES + HTML_SUFFIXES
MAX_ID_LENGTH = 40
# Elements whose content is never part of an article: page chrome and code.
_HTML_DROPPED = ("head", "script", "style", "nav", "header", "footer", "noscript", "template")
# Characters a web page (`&nbsp;`) or an editor leaves in that look like a space or like nothing
# but are other tokens (`prefixdesk prompts check` refuses them in a fixed prefix).
_INVISIBLE = str.maketrans(
    {"\u00a0": " ", "\u202f": " ", "\u00ad": "", "\u200b": "", "\u2060": "", "\ufeff": ""}
)
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(?P<title>.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_NOT_ID = re.compile(r"[^a-z0-9]+")

Status = Literal["added", "changed", "unchanged", "removed"]


class SyncError(ValueError):
    """The sync cannot start at all (no bot folder, no source folder, no articles)."""


class SourceError(ValueError):
    """One source file that cannot become an article; the message is the reason."""


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


@dataclass(frozen=True)
class Converted:
    title: str
    url: str | None
    body: str


def article_id(path: Path) -> str:
    """The id a source file becomes: its stem lower-cased, accents dropped, every run of other
    characters a hyphen, at most 40 characters; or a SourceError if nothing is left."""
    ascii_stem = unicodedata.normalize("NFKD", path.stem).encode("ascii", "ignore").decode().lower()
    slug = _NOT_ID.sub("-", ascii_stem).strip("-")[:MAX_ID_LENGTH].rstrip("-")
    if not ARTICLE_ID.match(slug):
        raise SourceError(
            "its name has no Latin letters or digits to make an article id from; "
            "rename it (e.g. late-payment-reminders.md)"
        )
    return slug


def convert_source(path: Path) -> Converted:
    """The article in one source file (by its suffix), or a SourceError saying why not."""
    suffix = path.suffix.lower()
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SourceError(f"not UTF-8 text ({error.reason} at byte {error.start})") from error
    except OSError as error:
        raise SourceError(f"cannot be read: {error.strerror or error}") from error
    if suffix in MARKDOWN_SUFFIXES:
        return _convert_markdown(text)
    if suffix in TEXT_SUFFIXES:
        return _convert_text(text)
    if suffix in HTML_SUFFIXES:
        return _convert_html(text)
    raise SourceError(f"not a source type ({', '.join(SOURCE_SUFFIXES)})")


def _convert_markdown(text: str) -> Converted:
    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise SourceError(f"its front matter is not valid YAML{where}: {error}") from error
    title, url, body = post.metadata.get("title"), post.metadata.get("url"), post.content
    if title is None:
        title, body = _take_first_h1(body)
        if title is None:
            raise SourceError("no title: give it front matter (---\\ntitle: ...\\n---) or a `# ` heading")
    if not isinstance(title, str):
        raise SourceError(f"title must be text, not {title!r}")
    if url is not None and not isinstance(url, str):
        raise SourceError(f"url must be an http(s) address, not {url!r}")
    return Converted(title, url, body)


def _take_first_h1(body: str) -> tuple[str | None, str]:
    """The first `# ` heading outside code blocks, and the body without it."""
    lines = body.split("\n")
    fenced = False
    for n, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := _ATX_H1.match(line)):
            return match["title"], "\n".join(lines[:n] + lines[n + 1 :])
    return None, body


def _convert_text(text: str) -> Converted:
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if line.strip():
            return Converted(line.strip(), None, "\n".join(lines[n + 1 :]))
    raise SourceError("the file is empty (its first non-empty line is the title)")


def _convert_html(text: str) -> Converted:
    soup = BeautifulSoup(text, "html.parser")
    title_tag, h1 = soup.find("title"), soup.find("h1")
    title = " ".join(title_tag.get_text().split()) if isinstance(title_tag, Tag) else ""
    h1_text = " ".join(h1.get_text().split()) if isinstance(h1, Tag) else ""
    if not title:
        title = h1_text
    if isinstance(h1, Tag) and h1_text and h1_text == title:
        h1.decompose()  # the title, not a heading of the body
    if not title:
        raise SourceError("no title: the page has neither a <title> nor an <h1>")
    url = _html_url(soup)
    for name in _HTML_DROPPED:
        for element in soup.find_all(name):
            element.decompose()
    root = soup.body if soup.body is not None else soup
    converter = MarkdownConverter(
        heading_style=ATX, bullets="-", escape_underscores=False, escape_asterisks=False
    )
    return Converted(title, url, str(converter.convert_soup(root)))


def _html_url(soup: BeautifulSoup) -> str | None:
    for tag, attribute in (
        (soup.find("link", rel="canonical"), "href"),
        (soup.find("meta", property="og:url"), "content"),
    ):
        if isinstance(tag, Tag):
            value = tag.get(attribute)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def render_markdown(converted: Converted) -> str:
    """An article file: front matter (`title`, `url` if any), then the normalised body."""
    meta: dict[str, Any] = {"title": " ".join(converted.title.translate(_INVISIBLE).split())}
    if converted.url:
        meta["url"] = converted.url.strip()
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1_000_000)
    return f"---\n{front}---\n{normalise_text(converted.body.translate(_INVISIBLE))}\n"


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
