"""One source file (Markdown, plain text or HTML) converted to an article file.

The id comes from the file's name; the title, url and body from its contents. Whatever is
written is normalised as the help center's loader expects, so that it reads back unchanged.
"""

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import frontmatter
import yaml
from bs4 import BeautifulSoup, Tag
from markdownify import ATX, MarkdownConverter

from backend.knowledge.articles import ARTICLE_ID, normalise_text

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


class SourceError(ValueError):
    """One source file that cannot become an article; the message is the reason."""


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
