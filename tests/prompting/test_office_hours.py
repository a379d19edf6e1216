"""Office hours in bot.toml: read strictly, open or closed at a moment, the next opening; the
demo bot that ships with them."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from backend.authoring.fixed_prefix import fixed_prefix_problems
from backend.config import PROJECT_ROOT
from backend.prompting.definitions import BotDefinitionError, load_bot, load_bots
from backend.prompting.office_hours import opening_text, parse_office_hours
from tests.authoring.edits import edited_bot

AMSTERDAM = ZoneInfo("Europe/Amsterdam")
TABLE = {"timezone": "Europe/Amsterdam", "hours": ["mon-fri 08:00-18:00", "sat 10:00-14:00"]}
OFFICE_HOURS = '\n[office_hours]\ntimezone = "Europe/Amsterdam"\nhours = ["mon-fri 08:00-18:00"]\n'


def hours():
    return parse_office_hours(TABLE, "shop-en", "")


def test_open_inside_the_hours_in_the_team_s_time_zone():
    # Monday 7 December 2026, 07:30 UTC is 08:30 in Amsterdam (winter time, UTC+1).
    assert hours().is_open(datetime(2026, 12, 7, 7, 30, tzinfo=UTC))
    assert not hours().is_open(datetime(2026, 12, 7, 6, 59, tzinfo=UTC))  # 07:59 there
    assert not hours().is_open(datetime(2026, 12, 7, 17, 0, tzinfo=UTC))  # 18:00 there: closed
    assert hours().is_open(datetime(2026, 12, 12, 12, 0, tzinfo=UTC))  # Saturday 13:00
    assert not hours().is_open(datetime(2026, 12, 13, 12, 0, tzinfo=UTC))  # Sunday


def test_the_next_opening_crosses_the_weekend_in_the_team_s_time_zone():
    # Saturday 12 December, 14:30 in Amsterdam: closed until Monday 08:00 there (07:00 UTC).
    opening = hours().next_opening(datetime(2026, 12, 12, 13, 30, tzinfo=UTC))
    assert opening == datetime(2026, 12, 14, 8, 0, tzinfo=AMSTERDAM)
    assert opening.astimezone(UTC) == datetime(2026, 12, 14, 7, 0, tzinfo=UTC)
    # Friday 23:30 UTC is already Saturday 00:30 in Amsterdam: Saturday 10:00 opens next.
    friday_night = datetime(2026, 12, 11, 23, 30, tzinfo=UTC)
    assert hours().next_opening(friday_night) == datetime(2026, 12, 12, 10, 0, tzinfo=AMSTERDAM)
    # Before opening on a weekday, the same day's opening.
    early = datetime(2026, 12, 8, 5, 0, tzinfo=UTC)
    assert hours().next_opening(early) == datetime(2026, 12, 8, 8, 0, tzinfo=AMSTERDAM)


def test_the_opening_is_told_in_the_bot_s_language_and_time_zone():
    opening = datetime(2026, 12, 14, 8, 0, tzinfo=AMSTERDAM)
    told = {tag: opening_text(opening, tag) for tag in ("en", "zh-CN", "es", "de")}
    assert told == {
        "en": "Monday, December 14, 2026, 8:00\u202fAM (Central European Standard Time)",
        "zh-CN": "2026年12月14日星期一 08:00（中欧标准时间）",
        "es": "lunes, 14 de diciembre de 2026, 8:00 (hora estándar de Europa central)",
        "de": "Montag, 14. Dezember 2026, 08:00 (Mitteleuropäische Normalzeit)",
    }
    # A language Babel does not know is told in English, never an error.
    assert opening_text(opening, "xx") == opening_text(opening, "en")


@pytest.mark.parametrize(
    ("hours_line", "problem"),
    [
        ('hours = ["mon-fry 08:00-18:00"]', "unknown day 'fry'"),
        ('hours = ["mon-fri 08:00-25:00"]', "25:00 is not a time of day"),
        ('hours = ["mon-fri 18:00-08:00"]', "must end after it starts"),
        ('hours = ["fri-mon 08:00-18:00"]', "runs backwards"),
        ('hours = ["weekdays"]', 'e.g. "mon-fri 08:00-18:00"'),
    ],
)
def test_a_bad_entry_names_the_bot_and_the_line(tmp_path, hours_line, problem):
    table = f'\n[office_hours]\ntimezone = "Europe/Amsterdam"\n{hours_line}\n'
    folder = edited_bot(tmp_path, "bot.toml", lambda text: text + table)
    line = (folder / "bot.toml").read_text().splitlines().index(hours_line) + 1
    with pytest.raises(BotDefinitionError, match=f"bot 'test-bot': bot.toml line {line}: .*{problem}"):
        load_bot(folder)


def test_an_unknown_time_zone_or_setting_is_named(tmp_path):
    bad_zone = '\n[office_hours]\ntimezone = "Europe/Amsterdm"\nhours = []\n'
    folder = edited_bot(tmp_path, "bot.toml", lambda text: text + bad_zone)
    with pytest.raises(BotDefinitionError, match=r"line \d+: unknown time zone 'Europe/Amsterdm'"):
        load_bot(folder)
    folder = edited_bot(tmp_path / "b", "bot.toml", lambda text: text + OFFICE_HOURS + 'days = "mon"\n')
    with pytest.raises(BotDefinitionError, match="no setting 'days'"):
        load_bot(folder)


def test_office_hours_stay_out_of_the_fixed_prefix(tmp_path):
    plain = load_bot(edited_bot(tmp_path / "a", "bot.toml", lambda text: text))
    folder = edited_bot(tmp_path / "b", "bot.toml", lambda text: text + OFFICE_HOURS)
    with_hours = load_bot(folder)
    assert with_hours.office_hours is not None and plain.office_hours is None
    assert with_hours.system_prompt == plain.system_prompt
    assert fixed_prefix_problems(folder) == []


def test_one_shipped_demo_bot_has_office_hours_the_others_are_always_there():
    """tallybook-en's team answers on weekdays 08:00-18:00 in Amsterdam, as its policy says, so
    the away flow can be tried; every moment below is fixed, none is the test's own clock."""
    bots = load_bots(PROJECT_ROOT / "prompts")
    assert {slug for slug, bot in bots.items() if bot.office_hours is not None} == {"tallybook-en"}
    tallybook = bots["tallybook-en"].office_hours
    assert tallybook is not None and str(tallybook.timezone) == "Europe/Amsterdam"
    assert tallybook.is_open(datetime(2026, 12, 9, 9, 0, tzinfo=UTC))  # Wednesday 10:00 there
    assert not tallybook.is_open(datetime(2026, 12, 9, 17, 0, tzinfo=UTC))  # Wednesday 18:00 there
    assert not tallybook.is_open(datetime(2026, 12, 12, 11, 0, tzinfo=UTC))  # Saturday noon there
    monday = tallybook.next_opening(datetime(2026, 12, 12, 11, 0, tzinfo=UTC))
    assert opening_text(monday, "en").startswith("Monday, December 14, 2026, 8:00\u202fAM")
    assert "Monday to Friday, 08:00 to 18:00" in (PROJECT_ROOT / "prompts/tallybook-en/policy.md").read_text()
