"""When a bot's human team is there, from `[office_hours]` in its bot.toml:

    [office_hours]
    timezone = "Europe/Amsterdam"
    hours = ["mon-fri 08:00-18:00", "sat 10:00-14:00"]

Each entry is days (`mon`, `mon-fri`, `mon,wed,fri`) and one span `HH:MM-HH:MM` within the
day (`24:00` ends at midnight). Never part of the prompt: the fixed prefix stays cached.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_datetime, format_time

from backend.languages import FALLBACK

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
ENTRY = re.compile(r"^(?P<days>[a-z,\-]+)\s+(?P<start>\d\d:\d\d)-(?P<end>\d\d:\d\d)$")
MINUTES_PER_DAY = 24 * 60
WIDE_PARENTHESES = ("zh", "ja")  # languages that write parentheses full-width


class OfficeHoursError(ValueError):
    """An `[office_hours]` table that cannot be read; says which bot and which line."""


@dataclass(frozen=True)
class Span:
    weekday: int  # Monday is 0
    start: int  # minutes after midnight
    end: int  # minutes after midnight, up to 1440


@dataclass(frozen=True)
class OfficeHours:
    timezone: ZoneInfo
    spans: tuple[Span, ...]

    def is_open(self, now: datetime) -> bool:
        local = now.astimezone(self.timezone)
        minute = local.hour * 60 + local.minute
        return any(s.weekday == local.weekday() and s.start <= minute < s.end for s in self.spans)

    def next_opening(self, now: datetime) -> datetime:
        """The next time a span starts after `now`, in the team's time zone."""
        local = now.astimezone(self.timezone)
        for offset in range(8):
            day = local.date() + timedelta(days=offset)
            for span in sorted((s for s in self.spans if s.weekday == day.weekday()), key=lambda s: s.start):
                opening = _at(day, span.start, self.timezone)
                if opening > local:
                    return opening
        raise AssertionError("office hours have at least one span, so a week has an opening")


def _at(day: date, minute: int, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(minute // 60, minute % 60), tzinfo=zone)


def opening_text(opening: datetime, language: str) -> str:
    """When the team answers, for the customer: the date and time in the team's time zone, as
    the bot's language writes them (CLDR's, through Babel), and the zone's name."""
    locale = _locale(language)
    when = locale.datetime_formats["medium"].format(
        format_time(opening, "short", locale=locale), format_date(opening, "full", locale=locale)
    )
    zone = format_datetime(opening, "zzzz", locale=locale)
    return f"{when}（{zone}）" if locale.language in WIDE_PARENTHESES else f"{when} ({zone})"


def _locale(language: str) -> Locale:
    try:
        return Locale.parse(language.replace("_", "-"), sep="-")
    except (ValueError, UnknownLocaleError):
        return Locale.parse(FALLBACK)


def parse_office_hours(table: object, slug: str, source: str) -> OfficeHours:
    """`[office_hours]` read strictly; `source` is bot.toml's text, to name the failing line."""

    def fail(found: str, detail: str) -> OfficeHoursError:
        return OfficeHoursError(f"bot {slug!r}: bot.toml line {_line_of(source, found)}: {detail}")

    if not isinstance(table, Mapping):
        raise fail("office_hours", "office_hours must be a table: [office_hours]")
    unknown = set(table) - {"timezone", "hours"}
    if unknown:
        name = sorted(unknown)[0]
        raise fail(name, f"[office_hours] has no setting {name!r} (only timezone and hours)")
    zone_name = table.get("timezone")
    if not isinstance(zone_name, str):
        raise fail("[office_hours]", 'set [office_hours] timezone, e.g. "Europe/Amsterdam"')
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise fail(zone_name, f"unknown time zone {zone_name!r}") from error
    hours = table.get("hours")
    if not isinstance(hours, list) or not hours or not all(isinstance(h, str) for h in hours):
        raise fail("[office_hours]", 'set [office_hours] hours, e.g. ["mon-fri 08:00-18:00"]')
    spans: list[Span] = []
    for entry in hours:
        try:
            spans += _spans(entry)
        except ValueError as error:
            raise fail(entry, f"{entry!r}: {error}") from None
    return OfficeHours(zone, tuple(spans))


def _spans(entry: str) -> list[Span]:
    match = ENTRY.match(entry.strip().lower())
    if match is None:
        raise ValueError('write days and a span, e.g. "mon-fri 08:00-18:00"')
    start, end = _minute(match["start"]), _minute(match["end"])
    if end <= start:
        raise ValueError("the span must end after it starts, on the same day")
    return [Span(day, start, end) for day in _days(match["days"])]


def _days(days: str) -> list[int]:
    found: list[int] = []
    for part in days.split(","):
        first, _, last = part.partition("-")
        for name in (first, last or first):
            if name not in DAYS:
                raise ValueError(f"unknown day {name!r} (use {', '.join(DAYS)})")
        a, b = DAYS.index(first), DAYS.index(last or first)
        if b < a:
            raise ValueError(f"{part!r} runs backwards (write e.g. mon-fri)")
        found += range(a, b + 1)
    return found


def _minute(clock: str) -> int:
    hours, minutes = int(clock[:2]), int(clock[3:])
    if minutes > 59 or hours * 60 + minutes > MINUTES_PER_DAY:
        raise ValueError(f"{clock} is not a time of day (00:00 to 24:00)")
    return hours * 60 + minutes


def _line_of(source: str, found: str) -> int:
    """The first line of bot.toml that mentions `found`, else the [office_hours] header's."""
    lines = source.splitlines()
    for wanted in (found, "[office_hours]"):
        for number, line in enumerate(lines, start=1):
            if wanted in line:
                return number
    return 1
