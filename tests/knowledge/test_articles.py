"""Reading a help center: canonical order, normalised text, and errors that name the file."""

from pathlib import Path

import pytest

from backend.knowledge.articles import Knowledge, KnowledgeError, load_knowledge, parse_article


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_articles_load_in_canonical_order_with_normalised_text(tmp_path):
    write(tmp_path, "zebra-pay.md", "---\ntitle: Zebra  pay\n---\nLine one.  \r\n\r\n\r\n\tIndented\n")
    write(tmp_path, "alpha.md", "---\ntitle: Alpha\nurl: https://help.example.com/alpha\n---\nAlpha text.\n")
    knowledge = load_knowledge(tmp_path)
    assert [a.id for a in knowledge] == ["alpha", "zebra-pay"]
    zebra = knowledge.get("zebra-pay")
    assert zebra is not None and zebra.title == "Zebra pay" and zebra.url is None
    assert zebra.text == "Line one.\n\n    Indented"
    assert knowledge.get("alpha").url == "https://help.example.com/alpha"  # type: ignore[union-attr]


def test_the_same_folder_gives_the_same_digest_and_a_change_changes_it(tmp_path):
    write(tmp_path, "a.md", "---\ntitle: A\n---\nText.\n")
    first = load_knowledge(tmp_path).digest
    assert load_knowledge(tmp_path).digest == first
    write(tmp_path, "a.md", "---\ntitle: A\n---\nOther text.\n")
    assert load_knowledge(tmp_path).digest != first
    assert Knowledge.of_records(load_knowledge(tmp_path).as_records()) == load_knowledge(tmp_path)


def test_no_folder_is_no_knowledge(tmp_path):
    assert not load_knowledge(tmp_path / "knowledge")


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("Bad Name.md", "---\ntitle: A\n---\nx", "file name is its id"),
        ("no-title.md", "---\nurl: https://a.example\n---\nx", "needs a title"),
        ("bad-yaml.md", "---\ntitle: [unclosed\n---\nx", "not valid YAML at line"),
        ("bad-url.md", "---\ntitle: A\nurl: javascript:alert(1)\n---\nx", "url must be"),
        ("empty.md", "---\ntitle: A\n---\n\n", "no text"),
    ],
)
def test_an_article_that_does_not_parse_names_its_file(tmp_path, name, text, reason):
    path = write(tmp_path, name, text)
    with pytest.raises(KnowledgeError, match=reason) as error:
        parse_article(path)
    assert str(path) in str(error.value)


def test_a_stray_file_is_refused(tmp_path):
    write(tmp_path, "a.md", "---\ntitle: A\n---\nx")
    write(tmp_path, "notes.txt", "x")
    with pytest.raises(KnowledgeError, match="notes.txt"):
        load_knowledge(tmp_path)
