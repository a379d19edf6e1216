"""Which articles match a question (English and Chinese), and which a reply may cite."""

from backend.knowledge.articles import Article, Knowledge
from backend.knowledge.citations import cited
from backend.knowledge.search import ArticleSearch

EN = Knowledge(
    (
        Article("invoice-numbering", "Invoice numbers", None, "Invoices are numbered INV-0001 onwards."),
        Article("late-fees", "Late fees", "https://help.example.com/late-fees", "A late fee of 2% is added."),
        Article("two-factor", "Two-factor sign-in", None, "Turn on two-factor authentication in Security."),
    )
)
ZH = Knowledge(
    (
        Article("install", "上门安装", None, "空调安装免费，冰箱不需要安装。"),
        Article("warranty", "保修政策", None, "整机保修三年，压缩机保修十年。"),
    )
)


def test_citations_keep_known_ids_drop_made_up_ones_and_leave_the_text_clean():
    text, sources = cited("A 2% fee is added [late-fees]. See also [returns-faq] and [late-fees].", EN)
    assert text == "A 2% fee is added. See also and."
    assert [s.as_dict() for s in sources] == [
        {"id": "late-fees", "title": "Late fees", "url": "https://help.example.com/late-fees"}
    ]


def test_bracketed_prose_stays_and_a_bot_without_articles_cites_nothing():
    assert cited("Press [enter] to go on.", EN) == ("Press [enter] to go on.", [])
    assert cited("Fee [late-fees]", Knowledge()) == ("Fee [late-fees]", [])


def test_new_matches_are_the_best_not_yet_given_in_canonical_order():
    search = ArticleSearch(EN, "en")
    assert [a.id for a in search.new_matches("Is there a fee when a client pays late?", 1, set())] == [
        "late-fees"
    ]
    both = search.new_matches("late fee on invoice numbers", 2, set())
    assert [a.id for a in both] == ["invoice-numbering", "late-fees"]
    assert [a.id for a in search.new_matches("late fee on invoice numbers", 2, {"late-fees"})] == [
        "invoice-numbering"
    ]
    assert search.new_matches("weather tomorrow", 2, set()) == []


def test_chinese_questions_find_chinese_articles():
    search = ArticleSearch(ZH, "zh")
    assert [a.id for a in search.new_matches("压缩机坏了保修几年？", 1, set())] == ["warranty"]
    assert [a.id for a in search.new_matches("空调要收安装费吗", 1, set())] == ["install"]
