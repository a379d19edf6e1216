"""Search terms in several languages, and BM25 over a fixed list of passages."""

from concurrent.futures import ThreadPoolExecutor

from hypothesis import given
from hypothesis import strategies as st

from backend.retrieval.index import LexicalIndex
from backend.retrieval.terms import terms


def test_english_terms_are_stemmed_words_without_stop_words():
    assert terms("How many days do I have to return the tents?", "en") == ["mani", "day", "return", "tent"]
    assert terms("RETURNING a Tent", "en-GB") == ["return", "tent"]


def test_other_languages_with_a_snowball_stemmer_are_stemmed_too():
    assert terms("Wie lange dauert die Lieferung?", "de") == ["lang", "dauert", "liefer"]
    assert terms("Les retours sont gratuits", "fr") == ["retour", "gratuit"]


def test_a_language_without_stemmer_or_stop_words_keeps_its_words_as_written():
    assert terms("Vrácení zboží do 30 dnů", "xx") == ["vrácení", "zboží", "do", "30", "dnů"]


def test_chinese_gives_characters_and_their_pairs_without_single_character_stop_words():
    found = terms("冰箱的保修", "zh")
    assert "的" not in found  # a stop word on its own
    assert {"冰", "箱", "保", "修", "冰箱", "箱的", "的保", "保修"} <= set(found)
    assert terms("保修多久？warranty", "zh") == ["保", "修", "多", "久", "保修", "修多", "多久", "warranty"]


def test_full_width_forms_and_case_read_as_their_plain_forms():
    assert terms("ＥＵ Ｒｅｔｕｒｎｓ ４５", "en") == ["eu", "return", "45"]


PASSAGES = [
    "Customers may return any unused item within 45 days of delivery.",
    "Standard delivery takes 2 to 4 business days in the EU.",
    "Tents carry a 2-year warranty.",
    "Gift cards cannot be returned or refunded.",
]


def test_the_best_passages_come_in_their_own_order():
    index = LexicalIndex(PASSAGES, "en")
    assert index.best("How long is the warranty on tents?", 1) == [2]
    # Both return lines match; they come back in the list's order, not by score.
    assert index.best("Can I return a gift card?", 2) == [0, 3]
    assert index.best("Can I return a gift card?", 1) == [3]


def test_nothing_matches_nothing():
    index = LexicalIndex(PASSAGES, "en")
    assert index.best("Hello there!", 3) == []
    assert index.best("warranty", 0) == []
    assert LexicalIndex([], "en").best("warranty", 3) == []


def test_chinese_questions_find_chinese_lines():
    lines = ["整机保修3年，压缩机和电机保修10年。", "退款在仓库收到退货后3个工作日内原路退回。"]
    index = LexicalIndex(lines, "zh")
    assert index.best("压缩机坏了还保修吗", 1) == [0]
    assert index.best("退款多久到账", 1) == [1]


@given(query=st.text(max_size=80), count=st.integers(0, 6))
def test_any_query_gives_distinct_positions_in_ascending_order(query, count):
    found = LexicalIndex(PASSAGES, "en").best(query, count)
    assert found == sorted(set(found))
    assert len(found) <= count
    assert all(0 <= i < len(PASSAGES) for i in found)


def test_terms_are_the_same_from_many_threads_at_once():
    # Turns build their notes on worker threads, several at once (a burst of long messages
    # once failed a turn with Snowball's IndexError): each thread stems with its own stemmer.
    texts = [
        " ".join(
            f"returning refunds deliveries {n} shipped parcels exchanged items" for n in range(k, k + 300)
        )
        for k in range(64)
    ]
    alone = [terms(text, "en") for text in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda text: terms(text, "en"), texts))
    assert together == alone
