"""The admin page in a real browser (Debian's Chromium) under the pages' content security policy:
one sign-in with the console, figures that move with traffic and follow the chosen window,
charts on a time axis with gaps where nothing happened, p95 beside p99, both hit rates
explained, the support figures of the reports, and each bot's fixed prefix and help center."""

import re
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import update

from backend.agents.models import AgentRole
from backend.conversations.models import Conversation
from backend.metrics.store import RedisMetricsStore, Reply
from backend.redis_client import create_redis
from tests.helpers import done_event, send, start
from tests.support import REDIS_URL, SCREENSHOTS, client_app, make_agent, served, wait_ready

SIX_HOURS = 6 * 3600


@pytest.fixture
async def admin_url(tiny_settings, tiny_engine) -> AsyncIterator[str]:
    """The app on loopback with a metrics store of its own: only this test's figures are in it."""
    prefix = f"{tiny_settings.redis_key_prefix}admin{uuid.uuid4().hex[:8]}:"
    settings = tiny_settings.model_copy(update={"redis_key_prefix": prefix})
    async with served(settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        yield url


@pytest.fixture
async def policy_watch(browser) -> AsyncIterator:
    """A browser context whose pages report every content security policy violation."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id="UTC")
    violations: list[str] = []
    context.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    yield context, violations
    await context.close()
    assert violations == []


@pytest.fixture
async def seeding(admin_url) -> AsyncIterator[tuple[list[float], RedisMetricsStore]]:
    """The served app's metrics store, written at the moment the list holds (the past)."""
    client = create_redis(REDIS_URL)
    prefix = client_app(admin_url).state.services.settings.redis_key_prefix
    at = [time.time()]
    yield at, RedisMetricsStore(client, key_prefix=prefix, clock=lambda: at[0])
    await client.aclose()


async def hand_over_and_resolve(customer: httpx.AsyncClient, admin: dict[str, str]) -> None:
    """A conversation whose customer asks for a person, answered and resolved by one."""
    handed = await start(customer)
    done_event(await send(customer, handed, "I'd like to talk to a human, please."))
    path = f"/api/v1/conversations/{handed['conversation_id']}"
    assert (
        await customer.post(f"{path}/messages", headers=admin, json={"text": "Hello, Ada here."})
    ).is_success
    assert (await customer.post(f"{path}/resolve", headers=admin)).is_success


async def sign_in(page, url: str, token: str) -> None:
    await page.goto(url + "/admin")
    await page.fill("#admin-token", token)
    await page.click("text=Sign in")
    await page.wait_for_selector("#window")


async def test_one_sign_in_serves_the_console_and_the_admin_page(policy_watch, live_url):
    context, _ = policy_watch
    app = client_app(live_url)
    _, admin = await make_agent(app, AgentRole.ADMIN)
    _, agent = await make_agent(app)
    admin_token = admin["Authorization"].removeprefix("Bearer ")
    page = await context.new_page()
    await page.goto(live_url + "/admin")
    await page.fill("#admin-token", "pdk_wrong")
    await page.click("text=Sign in")
    await page.wait_for_selector("text=not a valid agent API token")
    # An agent's token is refused here and not kept: the tab is not signed in as them.
    await page.fill("#admin-token", agent["Authorization"].removeprefix("Bearer "))
    await page.click("text=Sign in")
    await page.wait_for_selector("text=this page needs an admin's API token")
    assert await page.evaluate("sessionStorage.length") == 0
    await page.fill("#admin-token", admin_token)
    await page.click("text=Sign in")
    await page.wait_for_selector("#window")

    # Pasted once: the console in the same tab is signed in with it.
    await page.goto(live_url + "/console")
    await page.wait_for_selector("#app-view:not([hidden])")
    assert await page.is_hidden("#sign-in-view")
    assert (await page.text_content("#agent-role")) == "admin"
    # Signing out of the console signs the admin page out too.
    await page.click("#sign-out")
    await page.goto(live_url + "/admin")
    await page.wait_for_selector("#admin-token")

    # And the other way round: signed in on the console, the admin page opens at once.
    await page.goto(live_url + "/console")
    await page.fill("#token-input", admin_token)
    await page.click("#sign-in-form button[type=submit]")
    await page.wait_for_selector("#app-view:not([hidden])")
    await page.goto(live_url + "/admin")
    await page.wait_for_selector("#window")
    await page.click("text=Sign out")
    await page.wait_for_selector("#admin-token")
    await page.goto(live_url + "/console")
    await page.wait_for_selector("#sign-in-view:not([hidden])")


async def test_the_admin_page_shows_numbers_that_move_with_traffic(policy_watch, admin_url, seeding):
    context, _ = policy_watch
    _, admin = await make_agent(client_app(admin_url), AgentRole.ADMIN)
    at, store = seeding
    now = at[0]
    for minutes_ago, replies in ((11, 4), (10.5, 2), (7, 6), (4, 3)):  # earlier bursts, idle between
        at[0] = now - minutes_ago * 60
        for i in range(replies):
            total_ms = 400 + 300 * i + 2000 * (i == replies - 1)
            await store.record_reply(
                Reply("shop-en", True, total_ms / 4, total_ms, 760, 704, 20, total_ms * 0.7)
            )
    await store.record_engine({"shed:handoff": 1, "shed:samples": 2})  # a burst shed checks
    page = await context.new_page()
    await sign_in(page, admin_url, admin["Authorization"].removeprefix("Bearer "))
    await page.wait_for_function("() => (document.getElementById('replies')?.textContent ?? '–') !== '–'")
    assert await page.text_content("#checks-shed") == "3"
    assert (await page.text_content("#checks-shed-sub")).endswith("samples 2 · handoff 1")  # in shed order
    before = int(await page.text_content("#replies"))
    async with httpx.AsyncClient(base_url=admin_url, timeout=60) as customer:
        conversation = await start(customer)
        for question in ("Is return shipping free?", "How long is the warranty?", "Thanks"):
            done_event(await send(customer, conversation, question))
        await hand_over_and_resolve(customer, admin)
    grown = f"() => Number(document.getElementById('replies').textContent) >= {before + 3}"
    await page.wait_for_function(grown)
    await page.wait_for_function("() => document.getElementById('vllm-hit-rate').textContent.endsWith('%')")
    assert (await page.text_content("#hit-rate")).endswith("%")
    assert (await page.text_content("#reply-speed")).endswith("tokens/s")
    assert await page.locator("#per-bot tbody tr").count() >= 1
    assert int(await page.text_content("#active")) >= 1

    # Honest names: a rate of the bot's replies, not of queries; both hit rates explained.
    text = await page.text_content("#admin")
    assert "QPS" not in text
    assert await page.get_by_role("heading", name="Replies/s", exact=True).count() == 1
    assert "bot replies finished per second" in await page.text_content("#replies-per-s-sub")
    explained = await page.text_content("#hit-rates-explained")
    for words in ("bot replies' prompt tokens", "vLLM's own counter", "judges", "warm-up"):
        assert words in explained, words
    assert "all engine requests" in await page.text_content("#vllm-hit-rate-sub")
    await page.wait_for_function("() => document.getElementById('kv-cache').textContent.endsWith('%')")
    await page.wait_for_function("() => document.getElementById('handoff-rate').textContent.endsWith('%')")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SCREENSHOTS / "admin.png", full_page=True)


async def test_charts_have_a_time_axis_gaps_and_p95_beside_p99(policy_watch, admin_url, seeding):
    """Replies five and four hours ago, none between: in the 6-hour window each chart has a
    labelled time axis and no line across the idle hour; p95 and p99 are drawn apart."""
    context, _ = policy_watch
    _, admin = await make_agent(client_app(admin_url), AgentRole.ADMIN)
    at, store = seeding
    now = at[0]
    for moment in (now - 5 * 3600, now - 4 * 3600):
        at[0] = moment
        for total_ms in [300] * 18 + [2500, 9000]:
            await store.record_reply(
                Reply("shop-en", True, total_ms / 3, total_ms, 700, 640, 20, total_ms / 2)
            )
    page = await context.new_page()
    await sign_in(page, admin_url, admin["Authorization"].removeprefix("Bearer "))
    await page.select_option("#window", str(SIX_HOURS))
    await page.wait_for_function("() => document.getElementById('replies').textContent === '40'")

    # A time axis: 24-hour clock labels every two hours, in order, the last at most 2 h ago.
    labels = await page.locator("#chart-total .tick-label").all_text_contents()
    assert 3 <= len(labels) <= 4 and all(re.fullmatch(r"\d\d:00", label) for label in labels), labels
    hours = [int(label[:2]) for label in labels]
    assert all((b - a) % 24 == 2 for a, b in zip(hours, hours[1:], strict=False)), labels
    assert (datetime.now(UTC).hour - hours[-1]) % 24 < 2

    # Gaps: each mark covers buckets with something in them, none spans the idle hour.
    first, second = (int(m) // 60 * 60 for m in (now - 5 * 3600, now - 4 * 3600))
    for chart in ("#chart-total", "#chart-ttft", "#chart-hit"):
        marks = page.locator(f"{chart} .series[data-from]")
        spans = [
            (
                int(await marks.nth(i).get_attribute("data-from")),
                int(await marks.nth(i).get_attribute("data-to")),
            )
            for i in range(await marks.count())
        ]
        assert spans, chart
        assert not [s for s in spans if s[0] <= first and s[1] >= second], (chart, spans)
        assert {s[0] for s in spans} >= {first, second}, (chart, spans)
    bars = await page.locator("#chart-rate rect.bar").evaluate_all(
        "bars => bars.map(b => Number(b.dataset.t))"
    )
    assert set(bars) == {first, second}, bars

    # p95 beside p99: both drawn, each with its own dash and colour, p95 above p99, in the legend.
    styles = {}
    for quantile in ("p50", "p95", "p99"):
        line = page.locator(f"#chart-total .line-{quantile}").first
        styles[quantile] = await line.evaluate(
            "e => { const s = getComputedStyle(e); return [s.stroke, s.strokeDasharray]; }"
        )
    assert len({tuple(s) for s in styles.values()}) == 3, styles
    order = await page.locator("#chart-total .series").evaluate_all(
        "marks => marks.map(m => [...m.classList].find(c => c.startsWith('line-')))"
    )
    assert max(i for i, c in enumerate(order) if c == "line-p99") < min(
        i for i, c in enumerate(order) if c == "line-p95"
    )
    legend = await page.locator("#chart-total + .legend li").all_text_contents()
    assert legend == ["p99", "p95", "p50 (median)"]
    assert await page.locator("#chart-hit + .legend li").all_text_contents() == [
        "vLLM: all engine requests",
        "app: bot replies' prompt tokens",
    ]


async def test_every_figure_follows_the_chosen_window(policy_watch, admin_url, seeding):
    context, _ = policy_watch
    app = client_app(admin_url)
    _, admin = await make_agent(app, AgentRole.ADMIN)
    at, store = seeding
    at[0] -= 3 * 3600
    for name in ("earlier-a", "earlier-b"):
        await store.touch_conversation(name)
    await store.record_reply(Reply("appliance-zh", True, 100, 800, 700, 640, 20, 700))
    # Prompt tokens enough to move the hit rate whatever the session's engine served meanwhile.
    await store.record_engine({"engine:pq": 10_000_000, "engine:ph": 0, "engine:samples": 1})
    async with httpx.AsyncClient(base_url=admin_url, timeout=60) as customer:
        conversation = await start(customer)
        done_event(await send(customer, conversation, "Is return shipping free?"))
        earlier = await start(customer, "appliance-zh")
    async with app.state.services.sessions() as db:  # a conversation started three hours ago
        started = datetime.now(UTC) - timedelta(hours=3)
        await db.execute(
            update(Conversation)
            .where(Conversation.id == earlier["conversation_id"])
            .values(created_at=started)
        )
        await db.commit()
    page = await context.new_page()
    await sign_in(page, admin_url, admin["Authorization"].removeprefix("Bearer "))

    async def figures(window: int) -> dict[str, str]:
        await page.select_option("#window", str(window))
        params = {"from": (datetime.now(UTC) - timedelta(seconds=window)).isoformat()}
        async with httpx.AsyncClient(base_url=admin_url, headers=admin) as api:
            report = (await api.get("/api/v1/reports", params=params)).json()
        expected = str(report["total"]["conversations"])
        await page.wait_for_function(
            "([w, n]) => document.getElementById('window-note').textContent.includes(w) "
            "&& document.getElementById('conversations').textContent === n",
            arg=["hour" if window == 3600 else "hours" if window > 3600 else "minutes", expected],
        )
        ids = (
            "replies",
            "active",
            "vllm-hit-rate",
            "per-bot",
            "conversations",
            "replies-per-s-sub",
            "active-sub",
        )
        return {i: await page.text_content(f"#{i}") for i in ids}

    recent, wide = await figures(900), await figures(SIX_HOURS)
    assert int(wide["replies"]) == int(recent["replies"]) + 1
    assert int(wide["active"]) == int(recent["active"]) + 2
    assert int(wide["conversations"]) >= int(recent["conversations"]) + 1  # each as the report counts
    assert "appliance-zh" in wide["per-bot"] and "appliance-zh" not in recent["per-bot"]
    assert wide["vllm-hit-rate"] != recent["vllm-hit-rate"]
    assert "the last 15 minutes" in recent["active-sub"] and "the last 6 hours" in wide["active-sub"]


async def test_the_support_figures_come_from_the_reports(policy_watch, admin_url):
    context, _ = policy_watch
    app = client_app(admin_url)
    _, admin = await make_agent(app, AgentRole.ADMIN)
    async with httpx.AsyncClient(base_url=admin_url, timeout=60) as customer:
        handed = await start(customer)
        done_event(await send(customer, handed, "I'd like to talk to a human, please."))
        path = f"/api/v1/conversations/{handed['conversation_id']}"
        assert (
            await customer.post(f"{path}/messages", headers=admin, json={"text": "Hello, Ada here."})
        ).is_success
        assert (await customer.post(f"{path}/resolve", headers=admin)).is_success
        rated = await customer.post(
            f"/api/v1/widget/conversations/{handed['conversation_id']}/rating",
            headers={"Authorization": f"Bearer {handed['customer_token']}"},
            json={"score": 4},
        )
        assert rated.is_success, rated.text
        report = (
            await customer.get(
                "/api/v1/reports",
                headers=admin,
                params={"from": (datetime.now(UTC) - timedelta(minutes=15)).isoformat()},
            )
        ).json()["total"]
    assert report["handed_off"] >= 1
    page = await context.new_page()
    await sign_in(page, admin_url, admin["Authorization"].removeprefix("Bearer "))
    await page.wait_for_function("() => document.getElementById('handoff-rate').textContent !== '–'")
    assert await page.text_content("#handoff-rate") == f"{report['handoff_rate'] * 100:.1f}%"
    assert (
        f"{report['handed_off']} of {report['conversations']} handed to a person"
        in await page.text_content("#handoff-rate-sub")
    )
    for tile, figure in (("first-response", "first_human_response_s"), ("resolution", "resolution_s")):
        assert re.fullmatch(r"\d+ s|\d+ min \d\d s|\d+ h \d\d min", await page.text_content(f"#{tile}"))
        assert f"{report[figure]['count']} conversation(s)" in await page.text_content(f"#{tile}-sub")
    assert "handed to a person" in await page.text_content("#handoff-rate-sub")
    assert await page.locator("#support-per-bot tbody tr").count() >= 1
    # Satisfaction: the mean of the customers' ratings in the window, and how many there are.
    ratings = report["ratings"]
    assert ratings["count"] >= 1
    assert await page.text_content("#satisfaction") == f"{ratings['mean']:.2f} / 5"
    assert f"{ratings['count']} rating(s)" in await page.text_content("#satisfaction-sub")


async def test_the_bots_table_shows_each_bot_warm_with_its_prefix_and_help_center(policy_watch, live_url):
    context, _ = policy_watch
    app = client_app(live_url)
    _, admin = await make_agent(app, AgentRole.ADMIN)
    async with httpx.AsyncClient(base_url=live_url, headers=admin) as api:
        listed = (await api.get("/api/v1/admin/bots")).json()
    bots = [bot for bot in listed if bot["warmth"] is not None]  # others: in the database, not served
    assert {bot["slug"] for bot in bots} == set(app.state.services.bots)
    tallybook = next(bot for bot in bots if bot["slug"] == "tallybook-en")["help_center"]
    assert tallybook["articles"] > 0 and not tallybook["in_prefix"]  # too long for the tiny model

    page = await context.new_page()
    await sign_in(page, live_url, admin["Authorization"].removeprefix("Bearer "))
    await page.wait_for_selector("#bots-served .state")
    shown = await page.locator("#bots-served tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )

    def help_center(center: dict | None) -> str:
        if center is None:
            return "–"
        where = "in the prefix" if center["in_prefix"] else "beside questions"
        return f"{center['articles']:,} articles, {center['tokens']:,} tokens, {where}"

    assert shown == [
        [
            bot["slug"],
            bot["name"],
            "warm",
            f"{bot['prefix_tokens']:,} tokens",
            help_center(bot["help_center"]),
        ]
        for bot in bots
    ]
    assert f"{tallybook['articles']} articles" in await page.text_content("#bots-served")
    await page.locator("#bots-served").screenshot(path=SCREENSHOTS / "admin-bots.png")
