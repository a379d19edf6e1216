"""What in a bot's fixed prefix would make its tokens differ between conversations.

Pure scanners over template sources and rendered texts. Each returns findings as
(kind, detail) pairs; `checks` attaches the bot and file.
"""

import re

from jinja2 import meta, nodes

# Jinja's own globals that always give the same result.
DETERMINISTIC_GLOBALS = frozenset({"range", "dict", "cycler", "joiner", "namespace"})
# Calls whose result changes from one render to the next.
DYNAMIC_CALLS = frozenset(
    {
        "now",
        "utcnow",
        "today",
        "time",
        "date",
        "datetime",
        "timestamp",
        "random",
        "randint",
        "choice",
        "shuffle",
        "uuid",
        "uuid1",
        "uuid4",
        "token_hex",
        "lipsum",
    }
)

_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_WEEKDAYS = (
    "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun"
)
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"

# Times without seconds ("08:00 to 18:00", "14:00 CET") are opening hours, not dates.
DATE_TIME_PATTERNS = (
    ("an ISO date", re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?\b")),
    (
        "a numeric date",
        re.compile(
            r"\b(?:\d{1,2}[./-]\d{1,2}[./-]\d{4}|\d{1,2}[./]\d{1,2}[./]\d{2}|\d{4}[./]\d{1,2}[./]\d{1,2})\b"
        ),
    ),
    ("a time of day with seconds", re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b")),
    ("a written date", re.compile(rf"\b(?:{_MONTHS})\.? {_ORDINAL}\b|\b{_ORDINAL} (?:of )?(?:{_MONTHS})\b")),
    (
        "a weekday with a date",
        re.compile(rf"\b(?:{_WEEKDAYS}),? (?:the )?(?:\d{{1,2}}[./]\d{{1,2}}|\d{{1,2}}(?:st|nd|rd|th))\b"),
    ),
    ("a Chinese date", re.compile(r"\d{4}年\d{1,2}月(?:\d{1,2}[日号])?|\d{1,2}月\d{1,2}[日号]")),
    (
        "words about the current date or time",
        re.compile(
            r"(?i)\b(?:today is|today's date|current (?:date|time)|the time is|it is now|as of today)\b"
            r"|今天是|今日是|当前(?:日期|时间)|现在的?时间"
        ),
    ),
    ("a Unix timestamp", re.compile(r"\b1[6-9]\d{8}(?:\d{3})?\b")),
)

RANDOM_ID_PATTERNS = (
    ("a UUID", re.compile(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b")),
    ("a long hex string", re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{16,}\b")),
    (
        "a session or request id",
        re.compile(
            r"(?i)\b(?:session|request|trace|correlation|conversation|client)[ _-]?id\b"
            r"\s*(?:[:=#]|is)\s*(?=[\w-]*\d)[\w-]{4,}"
        ),
    ),
    (
        "a random-looking token",
        re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[a-z])(?=[\w-]*[A-Z])[A-Za-z0-9_-]{20,}\b"),
    ),
)

# Characters that look like a space (or like nothing) but are other tokens.
INVISIBLE = {
    "\u00a0": "no-break space",
    "\u00ad": "soft hyphen",
    "\u200b": "zero-width space",
    "\u200c": "zero-width non-joiner",
    "\u200d": "zero-width joiner",
    "\u2060": "word joiner",
    "\ufeff": "byte order mark",
}
TRAILING_WHITESPACE = re.compile(r"[ \t]+$", re.MULTILINE)

Finding = tuple[str, str]  # (kind, detail)


def template_findings(tree: nodes.Template, allowed: set[str]) -> list[Finding]:
    """Variables not from bot.toml [vars], and calls that differ per render."""
    dynamic = _dynamic_calls(tree)
    findings: list[Finding] = [("dynamic-call", detail) for _, detail in dynamic]
    reported = {name for name, _ in dynamic}
    undeclared = meta.find_undeclared_variables(tree) - allowed - DETERMINISTIC_GLOBALS - reported
    for name in sorted(undeclared):
        findings.append(
            (
                "request-variable",
                f"`{name}` is not a static value from bot.toml [vars]; whatever varies per "
                "customer or request belongs in context.j2",
            )
        )
    return findings


def _dynamic_calls(tree: nodes.Template) -> list[tuple[str, str]]:
    found = []
    for call in tree.find_all(nodes.Call):
        name = _callee_name(call.node)
        if name in DYNAMIC_CALLS:
            found.append((name, f"`{name}()` gives a different value on every render"))
    for applied in tree.find_all(nodes.Filter):
        if applied.name == "random":
            found.append((applied.name, f"the `|{applied.name}` filter picks anew on every render"))
    return found


def _callee_name(node: nodes.Node) -> str | None:
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Getattr):
        return node.attr
    return None


def text_findings(text: str) -> list[Finding]:
    """Dates, times and random ids in rendered text."""
    findings = []
    for kind, patterns in (("date-time", DATE_TIME_PATTERNS), ("random-id", RANDOM_ID_PATTERNS)):
        for what, pattern in patterns:
            for match in pattern.finditer(text):
                findings.append((kind, f"{what}: {_quote(text, match.start(), match.end())}"))
    return findings


def whitespace_findings(text: str) -> list[Finding]:
    """Whitespace that renders "the same" text as different tokens once an editor touches it."""
    checks = (
        ("carriage return (CR): line-ending conversion adds or drops it", _lines_with(text, "\r")),
        ("trailing whitespace: editors strip it", _lines_matching(text, TRAILING_WHITESPACE)),
        ("a tab: editors turn tabs into spaces and back", _lines_with(text, "\t")),
    )
    findings = [
        ("whitespace", f"{reason}, on rendered line {_list(lines)}") for reason, lines in checks if lines
    ]
    for char, name in INVISIBLE.items():
        if lines := _lines_with(text, char):
            findings.append(
                ("whitespace", f"an invisible U+{ord(char):04X} ({name}), on rendered line {_list(lines)}")
            )
    return findings


def _lines_with(text: str, char: str) -> list[int]:
    # Split on LF only, so a CR stays visible inside its line.
    return [number for number, line in enumerate(text.split("\n"), 1) if char in line]


def _lines_matching(text: str, pattern: re.Pattern[str]) -> list[int]:
    return [text.count("\n", 0, match.start()) + 1 for match in pattern.finditer(text)]


def _list(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)


def _quote(text: str, start: int, end: int, context: int = 20) -> str:
    before = text[max(0, start - context) : start].split("\n")[-1]
    after = text[end : end + context].split("\n")[0]
    return repr(f"{before}{text[start:end]}{after}")
