"""Eval cases: `prompts/<bot>/eval.toml`, what customers ask a bot and what its answer must say.

[[case]]
name = "return window"
turns = ["How many days do I have to return an item?"]   # the last reply is judged
expect = [["45 days", "45-day"]]   # every group matched: any one spelling (case-insensitive)
forbid = ["30 days"]               # none of these may appear
polarity = "no"                    # a reply that opens with a plain yes or no must open this way
handoff = false                    # a human has the conversation by the end
context = { plan = "gold" }        # per-customer context, optional
sources = ["returns"]              # help-center articles that answer it (reported, not judged)
"""

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVAL_FILE = "eval.toml"
KEYS = {"name", "turns", "expect", "forbid", "polarity", "handoff", "context", "sources"}
POLARITIES = ("yes", "no")


class EvalFileError(ValueError):
    """An eval file that does not parse or holds a malformed case; names the file and line."""


@dataclass(frozen=True)
class Case:
    name: str
    turns: tuple[str, ...]
    expect: tuple[tuple[str, ...], ...] = ()
    forbid: tuple[str, ...] = ()
    handoff: bool = False
    context: dict[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()  # the articles that answer it: a reply should cite one of them
    polarity: str | None = None  # "yes" or "no": the right answer to a yes-or-no question


def load_cases(path: Path) -> list[Case]:
    text = path.read_text(encoding="utf-8")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:  # its message ends "(at line L, column C)" ...
        where = "" if "line" in str(error) else f" (line {len(text.splitlines())})"  # ... or "at end"
        raise EvalFileError(f"{path}: {error}{where}") from error
    unknown = set(document) - {"case"}
    if unknown:
        raise EvalFileError(f"{path}: unknown top-level keys {sorted(unknown)}; cases go in [[case]] tables")
    header_lines = [n for n, line in enumerate(text.splitlines(), 1) if line.strip() == "[[case]]"]
    cases, names = [], set()
    for index, raw in enumerate(document.get("case", [])):
        line = header_lines[index] if index < len(header_lines) else "?"
        case = _case(raw, f"{path}, line {line}")
        if case.name in names:
            raise EvalFileError(f"{path}, line {line}: a second case named {case.name!r}")
        names.add(case.name)
        cases.append(case)
    if not cases:
        raise EvalFileError(f"{path}: no [[case]] tables")
    return cases


def _case(raw: dict[str, Any], where: str) -> Case:
    unknown = set(raw) - KEYS
    if unknown:
        raise EvalFileError(f"{where}: unknown keys {sorted(unknown)}; a case has {sorted(KEYS)}")
    name = raw.get("name")
    turns = raw.get("turns")
    if not isinstance(name, str) or not name.strip():
        raise EvalFileError(f"{where}: a case needs a name")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        raise EvalFileError(f"{where}: case {name!r} needs turns, a list of the customer's messages")
    expect = raw.get("expect", [])
    if not isinstance(expect, list) or not all(_strings(group) for group in expect):
        raise EvalFileError(f"{where}: case {name!r}: expect is a list of lists of spellings")
    forbid = raw.get("forbid", [])
    if not _strings(forbid, allow_empty=True):
        raise EvalFileError(f"{where}: case {name!r}: forbid is a list of phrases")
    handoff = raw.get("handoff", False)
    if not isinstance(handoff, bool):
        raise EvalFileError(f"{where}: case {name!r}: handoff is true or false")
    context = raw.get("context", {})
    if not isinstance(context, dict) or not all(isinstance(v, str) for v in context.values()):
        raise EvalFileError(f"{where}: case {name!r}: context is a table of strings")
    sources = raw.get("sources", [])
    if not _strings(sources, allow_empty=True):
        raise EvalFileError(f"{where}: case {name!r}: sources is a list of article ids")
    polarity = raw.get("polarity")
    if polarity is not None and polarity not in POLARITIES:
        raise EvalFileError(f'{where}: case {name!r}: polarity is "yes" or "no", not {polarity!r}')
    if not expect and not forbid and "handoff" not in raw:
        raise EvalFileError(f"{where}: case {name!r} checks nothing: give expect, forbid or handoff")
    groups = tuple(tuple(group) for group in expect)
    return Case(name, tuple(turns), groups, tuple(forbid), handoff, dict(context), tuple(sources), polarity)


def _strings(value: Any, *, allow_empty: bool = False) -> bool:
    return (
        isinstance(value, list)
        and (allow_empty or bool(value))
        and all(isinstance(item, str) and item for item in value)
    )


def judge(case: Case, reply: str, handed_off: bool) -> list[str]:
    """Why the case failed ([] when it passed)."""
    reasons = []
    if handed_off != case.handoff:
        reasons.append("handed over to a human" if handed_off else "no handoff, one was expected")
    if not handed_off:  # after a handoff the bot's reply is the scripted notice: nothing to judge
        reasons += [f"missing {group[0]!r}" for group in missing(case, reply)]
        reasons += [f"says {phrase!r}" for phrase in case.forbid if phrase.lower() in reply.lower()]
    return reasons


def missing(case: Case, reply: str) -> list[tuple[str, ...]]:
    """The groups of expected spellings of which the reply has none."""
    lowered = reply.lower()
    return [group for group in case.expect if not any(spelling.lower() in lowered for spelling in group)]
