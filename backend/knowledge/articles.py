"""A bot's help center, read from `prompts/<bot>/knowledge/`: one Markdown file per article.

Each file is `<id>.md`, the id a short slug the model cites, and starts with YAML front
matter giving its `title` and, optionally, the public `url` customers can open:

    ---
    title: Send automatic reminders for late invoices
    url: https://help.example.com/articles/late-payment-reminders
    ---
    Body in Markdown.

Articles are kept in one canonical order (by id, compared as code points) and their text
normalised, so the same folder renders the same tokens in every process and on every machine.
"""

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import frontmatter
import yaml

ARTICLE_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
ARTICLE_SUFFIX = ".md"
_URL = re.compile(r"^https?://\S+$")
_BLANK_RUNS = re.compile(r"\n{3,}")


class KnowledgeError(ValueError):
    """An article that cannot be read; the message names its file."""


@dataclass(frozen=True)
class Article:
    id: str
    title: str
    url: str | None
    text: str  # the body, normalised

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Knowledge:
    """A bot's articles in canonical order; empty when it has none."""

    articles: tuple[Article, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.articles)

    def __iter__(self) -> Iterator[Article]:
        return iter(self.articles)

    def __len__(self) -> int:
        return len(self.articles)

    def get(self, article_id: str) -> Article | None:
        return next((a for a in self.articles if a.id == article_id), None)

    @property
    def digest(self) -> str:
        """Names this exact set of articles (a new version of the help center changes it)."""
        document = json.dumps([a.as_dict() for a in self.articles], ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(document.encode()).hexdigest()

    def as_records(self) -> list[dict[str, Any]]:
        return [a.as_dict() for a in self.articles]

    @classmethod
    def of_records(cls, records: list[dict[str, Any]] | None) -> "Knowledge":
        return cls(tuple(Article(**record) for record in records or []))

    def in_canonical_order(self, ids: set[str]) -> list[Article]:
        return [a for a in self.articles if a.id in ids]


def normalise_text(text: str) -> str:
    """NFC, Unix line ends, no trailing spaces, no tabs, at most one blank line in a row."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.replace("\t", "    ").rstrip() for line in text.split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def parse_article(path: Path) -> Article:
    """The article in `path`, or a KnowledgeError naming the file and what is wrong with it."""
    article_id = path.name.removesuffix(ARTICLE_SUFFIX)
    if path.suffix != ARTICLE_SUFFIX or not ARTICLE_ID.match(article_id):
        raise KnowledgeError(
            f"{path}: an article's file name is its id plus .md: lower-case letters, digits and "
            f"hyphens, at most 40 characters (e.g. late-payment-reminders.md)"
        )
    try:
        post = frontmatter.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise KnowledgeError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from error
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise KnowledgeError(f"{path}: its front matter is not valid YAML{where}: {error}") from error
    title, url = post.metadata.get("title"), post.metadata.get("url")
    if not isinstance(title, str) or not title.strip():
        raise KnowledgeError(f"{path}: the front matter needs a title (---\\ntitle: ...\\n---)")
    if url is not None and (not isinstance(url, str) or not _URL.match(url.strip())):
        raise KnowledgeError(f"{path}: url must be an http(s) address, not {url!r}")
    text = normalise_text(post.content)
    if not text:
        raise KnowledgeError(f"{path}: the article has no text after its front matter")
    return Article(article_id, " ".join(title.split()), url.strip() if url else None, text)


def load_knowledge(folder: Path) -> Knowledge:
    """Every article in `folder` (none if it does not exist), in canonical order."""
    if not folder.is_dir():
        return Knowledge()
    stray = sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix != ARTICLE_SUFFIX)
    if stray:
        raise KnowledgeError(
            f"{folder}: only <id>.md articles belong here, not {', '.join(stray)} "
            "(`prefixdesk knowledge sync` converts text and HTML)"
        )
    articles = [parse_article(path) for path in folder.glob(f"*{ARTICLE_SUFFIX}")]
    return Knowledge(tuple(sorted(articles, key=lambda a: a.id)))


def render_article(article: Article) -> str:
    """An article as the model sees it beside a question, labelled with the id it cites."""
    return f"[{article.id}] {article.title}\n{article.text}"
