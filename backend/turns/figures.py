"""Figures in a text (amounts, durations, percentages, phone numbers), for checking a reply.

A figure is a number with the unit that follows it, if that unit is one of a known few:
"3 years" and "3年" are (3, year), "4.95 EUR" is (4.95, eur), "400-820-1357" is three bare
numbers. A reply's figure is supported when its source says the same number with the same
unit, or the same number at all when the reply gives it bare. A range ("2-4 days", "7–10天")
gives its unit to both ends.
"""

import functools
import re
from dataclasses import dataclass

UNITS = {
    "minute": ("minute", "minutes", "min", "mins", "分钟"),
    "hour": ("hour", "hours", "h", "hrs", "小时", "个小时"),
    "day": ("day", "days", "天", "日", "个工作日", "工作日"),
    "week": ("week", "weeks", "周", "星期", "个星期"),
    "month": ("month", "months", "个月", "月"),
    "year": ("year", "years", "yr", "yrs", "年"),
    "percent": ("%", "percent", "per cent", "％"),
    "eur": ("eur", "euro", "euros", "€"),
    "usd": ("usd", "dollar", "dollars", "$"),
    "cny": ("元", "块", "块钱", "rmb", "cny", "¥", "￥"),
    "metre": ("m", "metre", "metres", "meter", "meters", "米"),
    "kg": ("kg", "kilo", "kilos", "公斤", "千克"),
}
_UNIT_OF = {spelling: unit for unit, spellings in UNITS.items() for spelling in spellings}
# Longest spellings first, so "个工作日" wins over "日" and "months" over "m".
_UNIT_PATTERN = "|".join(sorted((re.escape(s) for s in _UNIT_OF), key=len, reverse=True))
_QUALIFIER = r"(?:business|working|calendar|full|more|extra)\s+"
_NUMBER = r"\d+(?:[.,]\d+)?"
_FIGURE = re.compile(
    rf"(?P<currency>[€$¥￥])?\s*(?P<first>{_NUMBER})"
    rf"(?:\s*(?:-|–|—|~|to|到|至)\s*(?P<second>{_NUMBER}))?"
    rf"(?:[\s-]*(?:{_QUALIFIER})?(?P<unit>{_UNIT_PATTERN})(?![A-Za-z]))?",
    re.IGNORECASE,
)
_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fourteen": 14, "fifteen": 15,
    "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45, "sixty": 60, "ninety": 90,
}  # fmt: skip
_CHINESE_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_BEFORE_UNIT = rf"(?=[\s-]*(?:{_QUALIFIER})?(?:{_UNIT_PATTERN})(?![A-Za-z]))"
_ENGLISH_NUMBER = re.compile(
    r"\b(?:" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")\b" + _BEFORE_UNIT, re.IGNORECASE
)
_CHINESE_NUMBER = re.compile(r"[零一二两三四五六七八九十百]+" + _BEFORE_UNIT)

Figure = tuple[str, str | None]  # (the number, normalised; its unit or None)


def figures(text: str) -> set[Figure]:
    found: set[Figure] = set()
    for match in _FIGURE.finditer(_spelled_out_as_digits(text)):
        unit = _UNIT_OF.get((match["unit"] or "").lower()) or _UNIT_OF.get(match["currency"] or "")
        for number in (match["first"], match["second"]):
            if number is not None:
                found.add((_normalise(number), unit))
    return found


def claimed(text: str) -> frozenset[Figure]:
    """The figures a text asserts, as `unsupported` counts them."""
    return frozenset(figure for figure in figures(text) if _is_claim(figure))


def _is_claim(figure: Figure) -> bool:
    """A bare number of fewer than three digits is list numbering and the like, not a claim."""
    number, unit = figure
    return unit is not None or len(number.replace(".", "")) >= 3


def unsupported(reply: str, *sources: str) -> list[str]:
    """Why the reply's figures may be wrong, in words (`findings`)."""
    return [finding.describe() for finding in findings(reply, *sources)]


@dataclass(frozen=True)
class Finding:
    """A figure of the reply its sources do not back."""

    figure: str  # as the reply gives it: "2 year", "9.99 eur", "555"
    instead: str | None = None  # what the source sentence about the same thing says instead

    def describe(self, sources: str = "the policy") -> str:
        if self.instead is None:
            return f"{self.figure} is not in {sources}"
        return f"{self.figure} where {sources} says {self.instead}"


def findings(reply: str, *sources: str) -> list[Finding]:
    """Why the reply's figures may be wrong: ones its sources do not state, and ones they state
    of something else.

    Bare numbers count from three digits (phone numbers, amounts; `_is_claim`). A unit the
    source leaves implicit is accepted ("45 days" where the policy says "within 45"). A figure
    said of something else: the source sentence that best matches the reply's sentence (by the
    words they share) gives another number in the same unit, and no sentence with the reply's
    figure matches as well ("backpacks: 2 years" where the policy says "backpacks ... 3-year"
    and "tents ... 2-year").
    """
    read = [_read(source) for source in sources]
    known = set().union(*(source.figures for source in read))
    bare = {number for number, _ in known}
    found: list[Finding] = []
    for number, unit in sorted(figures(reply), key=lambda figure: (figure[0], figure[1] or "")):
        if unit and (number, unit) not in known and (number, None) not in known:
            found.append(Finding(f"{number} {unit}"))
        elif not unit and _is_claim((number, unit)) and number not in bare:
            found.append(Finding(number))
    source_sentences = [sentence for source in read for sentence in source.sentences]
    for sentence in _sentences(reply):
        words = _words(sentence)
        for number, unit in figures(sentence):
            if unit is None or Finding(f"{number} {unit}") in found:
                continue
            overlap = [
                (len(words & their_words), their_figures) for their_figures, their_words in source_sentences
            ]
            with_it = max((n for n, theirs in overlap if (number, unit) in theirs), default=0)
            best, best_figures = max(overlap, key=lambda pair: pair[0], default=(0, frozenset()))
            others = sorted(n for n, u in best_figures if u == unit and n != number)
            if best > with_it and others and (number, unit) not in best_figures:
                found.append(Finding(f"{number} {unit}", f"{others[0]} {unit}"))
    return found


@dataclass(frozen=True)
class _Source:
    figures: frozenset[Figure]
    sentences: tuple[tuple[frozenset[Figure], frozenset[str]], ...]  # each one's figures and words


@functools.lru_cache(maxsize=256)
def _read(text: str) -> _Source:
    """A source's figures and sentences, read once: a bot's system prompt is the same every turn."""
    sentences = tuple((frozenset(figures(s)), frozenset(_words(s))) for s in _sentences(text))
    return _Source(frozenset(figures(text)), sentences)


def _sentences(text: str) -> list[str]:
    """Sentences, and Chinese clauses: a Chinese sentence often gives two figures, one per clause."""
    return [part for part in re.split(r"(?<=[.!?;])\s+|(?<=[。！？；，])|\n", text) if part.strip()]


_STOPWORDS = frozenset(
    {
        "that", "this", "with", "from", "have", "will", "which", "their", "they", "them",
        "there", "than", "then", "also", "only", "your", "what", "when", "where", "does", "into",
    }
)  # fmt: skip


def _words(text: str) -> set[str]:
    """Content words: Latin words of four letters and more, cut to their first five (a rough
    stem: "returned" and "returns" meet), and pairs of Chinese characters."""
    lowered = text.lower()
    words = {w[:5] for w in re.findall(r"[a-z]{4,}", lowered) if w not in _STOPWORDS}
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        words |= {run[i : i + 2] for i in range(len(run) - 1)}
    return words


def _normalise(number: str) -> str:
    # "1,000" is a thousand; "4,95" is the European spelling of 4.95.
    if re.fullmatch(r"\d{1,3}(,\d{3})+", number):
        number = number.replace(",", "")
    number = number.replace(",", ".")
    return number.rstrip("0").rstrip(".") if "." in number else number.lstrip("0") or "0"


def _spelled_out_as_digits(text: str) -> str:
    """Numbers written in words become digits where a unit follows ("three years", "三年")."""
    text = _ENGLISH_NUMBER.sub(lambda match: str(_WORDS[match[0].lower()]), text)
    return _CHINESE_NUMBER.sub(lambda match: _chinese(match[0]), text)


def _chinese(numeral: str) -> str:
    """Simple Chinese numerals up to 999 (三, 十五, 四十五, 一百二十); others stay as written."""
    total, digit = 0, 0
    for char in numeral:
        if char in _CHINESE_DIGITS:
            digit = _CHINESE_DIGITS[char]
        elif char == "十":
            total += (digit or 1) * 10
            digit = 0
        elif char == "百":
            total += (digit or 1) * 100
            digit = 0
    total += digit
    return str(total) if total or numeral == "零" else numeral
