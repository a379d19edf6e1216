"""`prefixdesk knowledge sync`: sources converted to articles, all or nothing, with a report."""

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backend.cli import app
from backend.knowledge.articles import load_knowledge, parse_article
from backend.knowledge.conversion import article_id
from backend.knowledge.sync import SyncError, sync_knowledge

HTML = """<!doctype html>
<html><head>
  <title>Late payment reminders</title>
  <link rel="canonical" href="https://help.example.com/articles/late-payments">
  <style>body { color: red }</style>
  <script>window.track("page")</script>
</head><body>
  <header>Acme help center</header>
  <nav><a href="/">Home</a> &gt; Billing</nav>
  <h1>Late payment reminders</h1>
  <p>Send&nbsp;reminders for <strong>late</strong> invoices.</p>
  <h2>Turn them on</h2>
  <ul><li>Open <em>Settings</em></li><li>Pick a schedule</li></ul>
  <script>console.log("inline")</script>
  <footer>© Acme</footer>
</body></html>
"""


def write(folder: Path, name: str, text: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    """A prompts folder with one (empty) bot, `shop`."""
    (tmp_path / "prompts" / "shop").mkdir(parents=True)
    return tmp_path / "prompts"


@pytest.fixture
def bot(prompts: Path) -> Path:
    return prompts / "shop"


def statuses(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {change.id: change.status for change in report.changes}


def test_html_becomes_markdown_with_its_title_and_canonical_url(tmp_path, bot):
    write(tmp_path / "src", "Late_Payments.html", HTML)
    report = sync_knowledge(bot, tmp_path / "src")
    assert report.ok and report.written
    path = bot / "knowledge" / "late-payments.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(
        "---\ntitle: Late payment reminders\nurl: https://help.example.com/articles/late-payments\n---\n"
    )
    article = parse_article(path)
    assert article.title == "Late payment reminders"
    assert article.url == "https://help.example.com/articles/late-payments"
    assert "## Turn them on" in article.text
    assert "- Open *Settings*\n- Pick a schedule" in article.text
    assert "Send reminders for **late** invoices." in article.text  # the no-break space is a space
    for dropped in ("track", "console.log", "color: red", "Acme help center", "Home", "© Acme"):
        assert dropped not in text
    assert "# Late payment reminders" not in article.text  # the title is not repeated as a heading


def test_html_without_a_title_element_takes_its_first_h1_and_og_url(tmp_path, bot):
    write(
        tmp_path / "src",
        "refunds.htm",
        '<html><head><meta property="og:url" content="https://help.example.com/refunds"></head>'
        "<body><h1>Refunds</h1><p>Within 14 days.</p><h1>Exceptions</h1><p>None.</p></body></html>",
    )
    sync_knowledge(bot, tmp_path / "src")
    article = parse_article(bot / "knowledge" / "refunds.md")
    assert (article.title, article.url) == ("Refunds", "https://help.example.com/refunds")
    assert article.text == "Within 14 days.\n\n# Exceptions\n\nNone."


def test_text_takes_its_first_line_as_the_title(tmp_path, bot):
    write(tmp_path / "src", "shipping.txt", "\n  Shipping costs  \n\nFree over 50 EUR.\r\nElse 4.95 EUR.\n")
    sync_knowledge(bot, tmp_path / "src")
    article = parse_article(bot / "knowledge" / "shipping.md")
    assert (article.title, article.url, article.text) == (
        "Shipping costs",
        None,
        "Free over 50 EUR.\nElse 4.95 EUR.",
    )


def test_markdown_keeps_its_front_matter_or_takes_its_first_heading(tmp_path, bot):
    source = tmp_path / "src"
    write(
        source, "returns.md", "---\ntitle: 'Returns: how'\nurl: https://help.example.com/r\n---\n# Steps\nx\n"
    )
    write(source, "Exchanges.markdown", "```sh\n# not a title\n```\n\n# Exchanges #\n\nSwap it.\n")
    sync_knowledge(bot, source)
    returns = parse_article(bot / "knowledge" / "returns.md")
    assert (returns.title, returns.url, returns.text) == (
        "Returns: how",
        "https://help.example.com/r",
        "# Steps\nx",
    )
    exchanges = parse_article(bot / "knowledge" / "exchanges.md")
    assert exchanges.title == "Exchanges"
    assert exchanges.text == "```sh\n# not a title\n```\n\nSwap it."


@pytest.mark.parametrize(
    ("name", "stem_id"),
    [
        ("Late Payments!.md", "late-payments"),
        ("Crème_brûlée.txt", "creme-brulee"),
        ("--a--b--.html", "a-b"),
        ("x" * 39 + "-yz.md", "x" * 39),
    ],
)
def test_the_id_is_the_stem_slugified(name, stem_id):
    assert article_id(Path(name)) == stem_id


def test_a_resync_reports_added_changed_unchanged_and_removed(tmp_path, bot):
    source = tmp_path / "src"
    write(source, "a.txt", "A\nFirst.\n")
    write(source, "b.txt", "B\nSecond.\n")
    write(source, "c.txt", "C\nThird.\n")
    assert set(statuses(sync_knowledge(bot, source)).values()) == {"added"}
    (source / "c.txt").unlink()
    write(source, "b.txt", "B\nSecond, edited.\n")
    write(source, "d.md", "---\ntitle: D\n---\nFourth.\n")
    write(source, "image.png", b"\x89PNG")
    report = sync_knowledge(bot, source)
    assert statuses(report) == {"a": "unchanged", "b": "changed", "d": "added", "c": "removed"}
    assert report.skipped == ["image.png (not .md, .markdown, .txt, .html, .htm)"]
    assert sorted(p.name for p in (bot / "knowledge").iterdir()) == ["a.md", "b.md", "d.md"]
    assert [p.name for p in bot.iterdir()] == ["knowledge"]  # no staging or old folder left behind
    assert [a.id for a in load_knowledge(bot / "knowledge")] == ["a", "b", "d"]


def test_a_dry_run_reports_and_writes_nothing(tmp_path, bot):
    source = tmp_path / "src"
    write(source, "a.txt", "A\nFirst.\n")
    sync_knowledge(bot, source)
    before = snapshot(bot)
    write(source, "b.txt", "B\nSecond.\n")
    report = sync_knowledge(bot, source, dry_run=True)
    assert statuses(report) == {"a": "unchanged", "b": "added"} and not report.written
    assert snapshot(bot) == before and [p.name for p in bot.iterdir()] == ["knowledge"]


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("untitled.html", "<html><body><p>No title here.</p></body></html>", "neither a <title> nor an <h1>"),
        ("latin1.txt", "Título\nañadir".encode("latin-1"), "not UTF-8"),
        ("broken.md", "---\ntitle: [unclosed\n---\nx\n", "not valid YAML at line"),
        ("headless.md", "Just text, no heading.\n", "no title"),
        ("empty-body.txt", "Only a title\n\n", "no text"),
        ("bad-url.md", "---\ntitle: T\nurl: /relative\n---\nx\n", "url must be"),
    ],
)
def test_a_failing_source_is_named_and_nothing_changes(tmp_path, bot, name, content, reason):
    source = tmp_path / "src"
    write(source, "a.txt", "A\nFirst.\n")
    sync_knowledge(bot, source)
    before = snapshot(bot)
    write(source, "a.txt", "A\nFirst, edited.\n")  # would be a change, if the sync went through
    write(source, name, content)
    report = sync_knowledge(bot, source)
    assert not report.ok and not report.written
    assert [(p.file, reason in p.reason) for p in report.problems] == [(source / name, True)]
    assert snapshot(bot) == before and [p.name for p in bot.iterdir()] == ["knowledge"]


def test_a_swap_that_fails_puts_the_old_folder_back(tmp_path, bot, monkeypatch):
    source = tmp_path / "src"
    write(source, "a.txt", "A\nFirst.\n")
    sync_knowledge(bot, source)
    before = snapshot(bot)
    write(source, "a.txt", "A\nFirst, edited.\n")
    rename, calls = os.rename, []

    def rename_in_fails(old, new):  # type: ignore[no-untyped-def]
        calls.append(Path(new).name)
        if Path(new).name == "knowledge" and len(calls) == 2:
            raise OSError("disk on fire")
        rename(old, new)

    monkeypatch.setattr(os, "rename", rename_in_fails)
    with pytest.raises(OSError, match="disk on fire"):
        sync_knowledge(bot, source)
    assert snapshot(bot) == before and [p.name for p in bot.iterdir()] == ["knowledge"]


def test_sources_with_one_id_are_refused_naming_both(tmp_path, bot):
    source = tmp_path / "src"
    write(source, "Refunds.md", "# Refunds\nx\n")
    write(source, "refunds.txt", "Refunds\ny\n")
    write(source, "ok.txt", "OK\nz\n")
    report = sync_knowledge(bot, source)
    assert sorted(p.file.name for p in report.problems) == ["Refunds.md", "refunds.txt"]
    for problem in report.problems:
        assert "'refunds'" in problem.reason
        other = "refunds.txt" if problem.file.name == "Refunds.md" else "Refunds.md"
        assert other in problem.reason
    assert not (bot / "knowledge").exists()


def test_no_bot_folder_no_source_or_no_articles_is_an_error(tmp_path, prompts):
    write(tmp_path / "src", "notes.pdf", b"%PDF")
    with pytest.raises(SyncError, match="no such bot folder"):
        sync_knowledge(prompts / "nobody", tmp_path / "src")
    with pytest.raises(SyncError, match="no such source folder"):
        sync_knowledge(prompts / "shop", tmp_path / "missing")
    with pytest.raises(SyncError, match="no articles"):
        sync_knowledge(prompts / "shop", tmp_path / "src")


# The command, through typer.

runner = CliRunner()


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["knowledge", *args])


def test_the_sync_command_reports_each_article_and_the_reload_hint(tmp_path, prompts):
    source = tmp_path / "src"
    write(source, "late-payments.html", HTML)
    write(source, "refunds.txt", "Refunds\nWithin 14 days.\n")
    result = invoke("sync", "shop", str(source), "--prompts-dir", str(prompts))
    assert result.exit_code == 0, result.output
    assert re.search(r"^added +late-payments +Late payment reminders", result.output, re.MULTILINE)
    assert re.search(r"^added +refunds +Refunds", result.output, re.MULTILINE)
    assert "2 article(s) now in" in result.output
    assert "run `prefixdesk prompts reload` to serve the new version" in result.output

    (source / "refunds.txt").unlink()
    result = invoke("sync", "shop", str(source), "--prompts-dir", str(prompts), "--dry-run")
    assert result.exit_code == 0, result.output
    assert re.search(r"^unchanged +late-payments", result.output, re.MULTILINE)
    assert re.search(r"^removed +refunds$", result.output, re.MULTILINE)
    assert "dry run: nothing written" in result.output
    assert (prompts / "shop" / "knowledge" / "refunds.md").exists()

    result = invoke("list", "shop", "--prompts-dir", str(prompts))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["id", "title", "url", "words"]
    assert (
        lines[1].split()[0] == "late-payments"
        and "https://help.example.com/articles/late-payments" in lines[1]
    )
    assert lines[2].split() == ["refunds", "Refunds", "-", "3"]
    assert "2 article(s)" in lines[3]


def test_the_sync_command_fails_naming_the_file_and_leaves_the_folder(tmp_path, prompts):
    source = tmp_path / "src"
    write(source, "a.txt", "A\nFirst.\n")
    assert invoke("sync", "shop", str(source), "--prompts-dir", str(prompts)).exit_code == 0
    before = snapshot(prompts)
    write(source, "bad.html", "<p>untitled</p>")
    result = invoke("sync", "shop", str(source), "--prompts-dir", str(prompts))
    assert result.exit_code == 1
    assert f"error: {source / 'bad.html'}: no title" in result.output
    assert snapshot(prompts) == before


def test_an_unknown_bot_is_a_clear_error(tmp_path, prompts):
    result = invoke("sync", "nobody", str(tmp_path), "--prompts-dir", str(prompts))
    assert result.exit_code == 1 and "no bot 'nobody'" in result.output and "bots: shop" in result.output
    result = invoke("list", "nobody", "--prompts-dir", str(prompts))
    assert result.exit_code == 1 and "no bot 'nobody'" in result.output


def test_list_with_no_articles_says_how_to_import_some(prompts):
    result = invoke("list", "shop", "--prompts-dir", str(prompts))
    assert result.exit_code == 0 and "no articles in" in result.output
