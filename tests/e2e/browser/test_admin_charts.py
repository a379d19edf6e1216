"""The admin page's charts in a real browser (Debian's Chromium) under the pages' content
security policy, in a time zone that is not UTC: the time axis names the zone, a bucket's exact
figures and time show on hover and on keyboard focus (in the chart and in the line under it,
the chart's description), each kind of figure is written one way, and a gap in the data
breaks the line: separate paths, a lone bucket a stroke of its own, never a dot."""

import math
import re
import time
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.async_api import expect

from backend.agents.models import AgentRole
from backend.metrics.store import RedisMetricsStore, Reply
from backend.redis_client import create_redis
from tests.e2e.browser.test_admin_page import sign_in
from tests.support import REDIS_URL, SCREENSHOTS, client_app, make_agent, served, wait_ready

ZONE = "America/Sao_Paulo"  # UTC-03:00 all year: no summer time to make the label depend on the date
STEP = 10  # the buckets of the 15-minute window


class Charted(NamedTuple):
    page: Any
    url: str
    admin: dict[str, str]
    buckets: list[int]  # two side by side, then a lone one after a gap


@pytest.fixture
async def charted(tiny_settings, tiny_engine, browser) -> AsyncIterator[Charted]:
    """The app with a metrics store of its own, replies seeded in two buckets side by side and
    in a lone one after a gap; a page in São Paulo's time zone that reports every violation of
    the content security policy; and the seeded buckets' starts."""
    prefix = f"{tiny_settings.redis_key_prefix}charts{uuid.uuid4().hex[:8]}:"
    settings = tiny_settings.model_copy(update={"redis_key_prefix": prefix})
    redis = create_redis(REDIS_URL)
    at = [0.0]
    store = RedisMetricsStore(redis, key_prefix=prefix, clock=lambda: at[0])
    first = (int(time.time()) - 600) // STEP * STEP
    buckets = {first: [300, 450, 2500], first + STEP: [800, 900], first + 30 * STEP: [1200]}
    for start, totals in buckets.items():
        at[0] = start + STEP / 2
        for total_ms in totals:
            await store.record_reply(
                Reply("shop-en", True, total_ms / 4, total_ms, 700, 640, 20, total_ms / 2)
            )
    context = await browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id=ZONE)
    violations: list[str] = []
    context.on(
        "console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None
    )
    async with served(settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        _, admin = await make_agent(client_app(url), AgentRole.ADMIN)
        page = await context.new_page()
        await sign_in(page, url, admin["Authorization"].removeprefix("Bearer "))
        await page.wait_for_function("() => document.getElementById('replies').textContent === '6'")
        yield Charted(page, url, admin, sorted(buckets))
    await context.close()
    await redis.aclose()
    assert violations == []


def ms(value: float) -> str:
    """format.js's `fmt.ms`."""
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{math.floor(value + 0.5)} ms"


def span(start: int) -> str:
    """format.js's `bucketSpan` for a 10-second bucket, in the page's time zone: its day first
    when that is not today (a bucket from before midnight)."""
    clock = [datetime.fromtimestamp(t, ZoneInfo(ZONE)).strftime("%H:%M:%S") for t in (start, start + STEP)]
    day = datetime.fromtimestamp(start, ZoneInfo(ZONE)).date()
    text = f"{clock[0]} to {clock[1]}"
    month = "Sept" if day.month == 9 else f"{day:%b}"  # as en-GB writes it
    return text if day == datetime.now(ZoneInfo(ZONE)).date() else f"{day.day} {month}, {text}"


async def series(url: str, admin: dict[str, str]) -> dict[int, dict]:
    async with httpx.AsyncClient(base_url=url, headers=admin) as api:
        metrics = (await api.get("/api/v1/admin/metrics", params={"window": 900})).json()
    return {point["t"]: point for point in metrics["series"]}


def figures(point: dict) -> list[str]:
    quantiles = point["total_ms"]
    return [
        f"p99: {ms(quantiles['p99'])}",
        f"p95: {ms(quantiles['p95'])}",
        f"p50 (median): {ms(quantiles['p50'])}",
    ]


def readout_of(start: int, points: dict[int, dict]) -> str:
    """The line under the chart for a bucket: its time and zone, then its figures."""
    return f"{span(start)} (America/Sao_Paulo, UTC-03:00): " + " · ".join(figures(points[start]))


async def point_at(page, selector: str, *, dx: float = 0) -> None:
    """The mouse on the middle of an element of a chart (a stroke has no height to hover)."""
    box = await page.locator(selector).evaluate(
        "e => { e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect();"
        " return [r.x, r.y, r.width, r.height]; }"
    )
    await page.mouse.move(box[0] + box[2] / 2 + dx, box[1] + box[3] / 2)


async def redrawn(page) -> None:
    """Waits for the page's next poll, which draws every chart again."""
    updated = await page.text_content("#updated")
    await page.wait_for_function("u => document.getElementById('updated').textContent !== u", arg=updated)


async def test_the_time_axis_names_the_zone_and_gaps_break_the_lines(charted):
    page, (first, second, lone) = charted.page, charted.buckets
    for chart in ("#chart-rate", "#chart-total", "#chart-ttft", "#chart-hit"):
        await expect(page.locator(f"{chart} .axis-title")).to_have_text("time (America/Sao_Paulo, UTC-03:00)")
        await expect(page.locator(f"{chart} .axis-title")).to_be_visible()
    # Each line: a path for the two buckets side by side, another for the lone one; no dots.
    for quantile in ("p50", "p95", "p99"):
        paths = page.locator(f"#chart-total path.line-{quantile}")
        spans = await paths.evaluate_all("ps => ps.map(p => [Number(p.dataset.from), Number(p.dataset.to)])")
        assert spans == [[first, second], [lone, lone]], (quantile, spans)
        lengths = await paths.evaluate_all("ps => ps.map(p => p.getTotalLength())")
        assert all(length >= 3 for length in lengths), lengths  # the lone bucket is a visible stroke
        moves = await paths.evaluate_all("ps => ps.map(p => p.getAttribute('d').split('M').length - 1)")
        assert moves == [1, 1]  # no path jumps over a gap
    assert await page.locator("#chart-total circle, #chart-ttft circle").count() == 0
    bars = await page.locator("#chart-rate rect.bar").evaluate_all("bs => bs.map(b => Number(b.dataset.t))")
    assert bars == [first, second, lone]
    # One formatter per kind of figure: the value axes are written as the tiles are.
    rates = await page.locator("#chart-rate .value-label").all_text_contents()
    assert rates == ["0", "0.25", "0.5"], rates  # 0.3 replies/s at most: "0.000" no more
    times = await page.locator("#chart-total .value-label").all_text_contents()
    assert times[0] == "0 ms" and all(re.fullmatch(r"\d\.\d\d s|\d+ ms", t) for t in times), times


async def test_a_bucket_s_exact_figures_show_on_hover_and_on_keyboard_focus(charted):
    page, (first, second, lone) = charted.page, charted.buckets
    points = await series(charted.url, charted.admin)
    tip, readout = page.locator("#chart-total .tip"), page.locator("#chart-total-readout")
    assert await page.get_attribute("#chart-total", "aria-describedby") == "chart-total-readout"

    # Hover: the lone bucket's time (in the page's zone) and each quantile as the tiles write it.
    await point_at(page, f"#chart-total path.line-p50[data-from='{lone}']")
    await expect(tip).to_have_attribute("data-t", str(lone))
    shown = await tip.locator("tspan").all_text_contents()
    assert shown == [span(lone), *figures(points[lone])], shown
    await expect(readout).to_have_text(readout_of(lone, points))
    await redrawn(page)  # the page redraws every 2 s: the bucket stays chosen
    await expect(tip).to_have_attribute("data-t", str(lone))
    # Between them, the gap says so; off the chart, the tip goes.
    await point_at(page, f"#chart-total path.line-p50[data-from='{lone}']", dx=-40)
    await expect(tip).to_contain_text("nothing in this bucket")
    await page.mouse.move(5, 5)
    await expect(tip).to_have_count(0)
    await expect(readout).to_have_text("")

    # The bars: a bucket's replies per second, as the Replies/s tile writes it.
    await point_at(page, f"#chart-rate rect.bar[data-t='{first}']")
    await expect(page.locator("#chart-rate .tip")).to_contain_text("replies/s per bucket: 0.3")
    await page.mouse.move(5, 5)

    # Keyboard: Tab reaches the chart, which shows its latest bucket; the arrows step through
    # the buckets with figures, skipping the gap; Escape hides the figures.
    await page.focus("#chart-rate")
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.id") == "chart-total"
    await expect(tip).to_have_attribute("data-t", str(lone))
    await expect(readout).to_contain_text(span(lone))
    for key, start in (("ArrowLeft", second), ("ArrowLeft", first), ("ArrowLeft", first), ("End", lone)):
        await page.keyboard.press(key)
        await expect(tip).to_have_attribute("data-t", str(start))
        await expect(readout).to_have_text(readout_of(start, points))
    await page.keyboard.press("Home")
    await page.keyboard.press("ArrowRight")
    await expect(tip).to_have_attribute("data-t", str(second))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.locator("#chart-total").locator("xpath=..").screenshot(path=SCREENSHOTS / "admin-chart.png")
    await page.keyboard.press("Escape")
    await expect(tip).to_have_count(0)
    await expect(readout).to_have_text("")
    await redrawn(page)  # hidden it stays, through the next poll
    await expect(tip).to_have_count(0)
