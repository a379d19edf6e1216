"""The agents' console at /console, in a real browser (Debian's Chromium) against the live app."""

import uuid
from collections.abc import AsyncIterator
from decimal import ROUND_HALF_UP, Decimal

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.helpers import auth, done_event, send, start
from tests.support import SCREENSHOTS, client_app, make_agent

API = "/api/v1/conversations"
XSS = '<img src=x onerror="window.__xss=1">'


@pytest.fixture(autouse=True)
def _patient_expectations():
    """The machine is shared and a bot turn runs a real engine: wait longer than Playwright's 5 s."""
    expect.set_options(timeout=15_000)
    yield
    expect.set_options(timeout=5_000)


@pytest.fixture
async def widget(live_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A customer's side: the widget API over HTTP."""
    async with httpx.AsyncClient(base_url=live_url, timeout=60) as client:
        yield client


@pytest.fixture
async def agent(live_url: str) -> tuple[int, dict[str, str]]:
    return await make_agent(client_app(live_url))


def token_of(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def unique_marker(word: str) -> str:
    return f"{word}{uuid.uuid4().hex[:8]}"


async def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SCREENSHOTS / f"console-{name}.png")


async def sign_in(page: Page, live_url: str, headers: dict[str, str]) -> None:
    await page.goto(live_url + "/console")
    await page.get_by_label("API token").fill(token_of(headers))
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#app-view")).to_be_visible()
    await expect(page.locator("#live-state")).to_have_attribute("data-state", "live")


def row(page: Page, conversation_id: str):
    return page.locator(f'button.row[data-conversation-id="{conversation_id}"]')


async def search(page: Page, text: str) -> None:
    await page.get_by_label("Search messages").fill(text)


async def open_conversation(page: Page, conversation_id: str, marker: str) -> None:
    """Find the conversation by a word in its messages and open it."""
    await search(page, marker)
    await expect(page.locator("#page-info")).to_have_text("1–1 of 1")
    await row(page, conversation_id).click()
    await expect(page.locator("#conversation-heading")).to_contain_text(conversation_id[:8])
    await expect(page.locator("#transcript li.greeting")).to_be_visible()


def message(page: Page, message_id: int):
    return page.locator(f'#transcript li[data-message-id="{message_id}"]')


async def transcript(widget: httpx.AsyncClient, headers: dict, conversation_id: str) -> dict:
    response = await widget.get(f"{API}/{conversation_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def customer_history(widget: httpx.AsyncClient, conversation: dict) -> dict:
    response = await widget.get(
        f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages", headers=auth(conversation)
    )
    assert response.status_code == 200, response.text
    return response.json()


def as_shown_ms(value: float) -> str:
    """What the console shows for a duration: JavaScript's toFixed(1) rounds the exact value half up."""
    return f"{Decimal(value).quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)} ms"


def as_shown_cache(cached: int, prompt: int) -> str:
    percent = (Decimal(100 * cached) / Decimal(prompt)).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return f"{cached}/{prompt} cached ({percent}%)"


async def test_signing_in_needs_a_real_agent_token(page, live_url, agent):
    agent_id, headers = agent
    await page.goto(live_url + "/console")
    await expect(page.locator("#app-view")).to_be_hidden()
    await page.get_by_label("API token").fill("pdk_not-a-real-token")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#sign-in-error")).to_have_text(
        "this token is not a valid agent API token (unknown or revoked)"
    )
    await expect(page.locator("#app-view")).to_be_hidden()

    await page.get_by_label("API token").fill(token_of(headers))
    await page.get_by_label("API token").press("Enter")
    await expect(page.locator("#app-view")).to_be_visible()
    await expect(page.locator("#sign-in-view")).to_be_hidden()
    async with httpx.AsyncClient(base_url=live_url) as client:
        me = (await client.get("/api/v1/me", headers=headers)).json()
    await expect(page.locator("#agent-name")).to_have_text(me["name"])
    await expect(page.locator("#agent-role")).to_have_text("agent")
    await expect(page.get_by_role("list", name="Conversations")).to_be_visible()
    await expect(page.locator("#page-info")).to_contain_text(" of ")

    # The token lives in the tab's sessionStorage: a reload stays signed in, signing out forgets it.
    await page.reload()
    await expect(page.locator("#agent-name")).to_have_text(me["name"])
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.locator("#sign-in-view")).to_be_visible()
    assert await page.evaluate("sessionStorage.length") == 0
    await page.reload()
    await expect(page.locator("#sign-in-view")).to_be_visible()
    assert agent_id == me["id"]


async def test_the_inbox_updates_live_and_filters(page, live_url, agent, widget):
    _, headers = agent
    await sign_in(page, live_url, headers)
    marker = unique_marker("lantern")

    # Customers write while the console is open: their conversations appear without a reload.
    with_bot = await start(widget)
    await expect(row(page, with_bot["conversation_id"])).to_be_visible()
    done_event(await send(widget, with_bot, f"Do you sell the {marker} in green?"))
    taken = await start(widget)
    done_event(await send(widget, taken, f"Is the {marker} waterproof?"))
    response = await widget.post(f"{API}/{taken['conversation_id']}/take-over", headers=headers)
    assert response.status_code == 200
    await expect(row(page, taken["conversation_id"]).locator(".badge")).to_have_attribute(
        "data-status", "open"
    )
    wants_person = await start(widget)
    done_event(await send(widget, wants_person, f"Please let me talk to a real person about the {marker}"))
    highlighted = row(page, wants_person["conversation_id"])
    await expect(highlighted).to_have_class("row needs-person")
    await expect(highlighted.locator(".flag")).to_have_text("Wants a person")

    await search(page, marker)
    rows = page.locator("#conversation-list button.row")
    await expect(rows).to_have_count(3)
    await expect(page.locator("#page-info")).to_have_text("1–3 of 3")
    await highlighted.click()
    await expect(page.locator("#conversation-handoff")).to_contain_text("The customer asked for a person")
    await expect(highlighted).to_have_attribute("aria-current", "true")
    await screenshot(page, "inbox")

    await page.get_by_label("Status").select_option("open")
    await expect(rows).to_have_count(2)
    await page.get_by_label("Assignee").select_option("me")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_have_attribute("data-conversation-id", taken["conversation_id"])
    await page.get_by_label("Assignee").select_option("unassigned")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_have_attribute("data-conversation-id", wants_person["conversation_id"])
    await page.get_by_label("Status").select_option("bot")
    await page.get_by_label("Assignee").select_option("")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_have_attribute("data-conversation-id", with_bot["conversation_id"])
    await page.get_by_label("Bot", exact=True).select_option("appliance-zh")
    await expect(rows).to_have_count(0)
    await expect(page.locator("#inbox-empty")).to_be_visible()

    # Narrow screens stack the inbox above the conversation.
    await page.get_by_label("Bot", exact=True).select_option("")
    await page.get_by_label("Status").select_option("")
    await expect(rows).to_have_count(3)
    await page.set_viewport_size({"width": 420, "height": 900})
    inbox_box = await page.locator(".inbox").bounding_box()
    conversation_box = await page.locator("#conversation").bounding_box()
    assert conversation_box["y"] >= inbox_box["y"] + inbox_box["height"] - 1
    await screenshot(page, "narrow")


async def test_the_inbox_pages_and_works_from_the_keyboard(page, live_url, agent, widget):
    _, headers = agent
    marker = unique_marker("canoe")
    ids = []
    for number in range(26):
        conversation = await start(widget)
        cid = conversation["conversation_id"]
        # With a person in charge the customer's message waits: no bot turn, so this stays quick.
        assert (await widget.post(f"{API}/{cid}/take-over", headers=headers)).status_code == 200
        await send(widget, conversation, f"{marker} question {number}")
        ids.append(cid)
    await sign_in(page, live_url, headers)
    await search(page, marker)
    rows = page.locator("#conversation-list button.row")
    await expect(page.locator("#page-info")).to_have_text("1–25 of 26")
    await expect(rows).to_have_count(25)
    await expect(rows.first).to_have_attribute("data-conversation-id", ids[-1])
    await expect(page.get_by_role("button", name="Previous")).to_be_disabled()
    await page.get_by_role("button", name="Next").click()
    await expect(page.locator("#page-info")).to_have_text("26–26 of 26")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_have_attribute("data-conversation-id", ids[0])
    await expect(page.get_by_role("button", name="Next")).to_be_disabled()
    await page.get_by_role("button", name="Previous").click()
    await expect(rows).to_have_count(25)

    # Arrow keys walk the list and Enter opens a conversation.
    await rows.first.focus()
    await page.keyboard.press("ArrowDown")
    await expect(rows.nth(1)).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.locator("#conversation-heading")).to_contain_text(ids[-2][:8])
    await expect(rows.nth(1)).to_have_attribute("aria-current", "true")
    await expect(page.locator("#transcript li.msg.role-user .msg-text")).to_have_text(f"{marker} question 24")
    await page.get_by_label("Reply to the customer").focus()
    await page.keyboard.type("On its way.")
    await page.keyboard.press("Enter")
    await expect(page.locator("#transcript li.msg.role-agent .msg-text")).to_have_text("On its way.")


async def test_the_transcript_shows_timings_and_cached_tokens(page, live_url, agent, widget):
    _, headers = agent
    marker = unique_marker("compass")
    conversation = await start(widget, context={"name": "Ada", "plan": "premium"})
    done_event(await send(widget, conversation, f"Where is my {marker} order?"))
    cid = conversation["conversation_id"]
    await sign_in(page, live_url, headers)
    await open_conversation(page, cid, marker)

    detail = await transcript(widget, headers, cid)
    asked, reply = detail["messages"]
    assert (asked["role"], reply["role"]) == ("user", "assistant")
    await expect(page.locator("#transcript li.greeting .msg-text")).to_have_text(detail["greeting"])
    await expect(message(page, asked["id"]).locator(".who")).to_have_text("Customer")
    await expect(message(page, asked["id"]).locator(".msg-text")).to_have_text(asked["text"])
    await expect(message(page, asked["id"]).locator(".metrics")).to_have_count(0)

    shown = message(page, reply["id"])
    await expect(shown.locator(".who")).to_have_text("Bot")
    await expect(shown.locator(".msg-status")).to_have_text(reply["status"])
    await expect(shown.locator(".msg-text")).to_have_text(
        reply["text"] if reply["text"].strip() else "(empty)"
    )
    assert reply["prompt_tokens"] > 0 and reply["cached_tokens"] is not None
    await expect(shown.locator('[data-metric="prompt-tokens"]')).to_have_text(
        f"{reply['prompt_tokens']} tokens"
    )
    await expect(shown.locator('[data-metric="cached"]')).to_have_text(
        as_shown_cache(reply["cached_tokens"], reply["prompt_tokens"])
    )
    await expect(shown.locator('[data-metric="ttft"]')).to_have_text(as_shown_ms(reply["ttft_ms"]))
    await expect(shown.locator('[data-metric="total"]')).to_have_text(as_shown_ms(reply["total_ms"]))
    await expect(shown.locator('[data-metric="completion-tokens"]')).to_have_text(
        f"{reply['completion_tokens']} tokens"
    )
    await expect(page.locator("#conversation-status")).to_have_attribute("data-status", "bot")
    await expect(page.locator("#conversation-assignee")).to_have_text("Unassigned")
    await expect(page.locator("#conversation-handoff")).to_have_text("None")
    await expect(page.locator(".context-fact dd")).to_have_text("name: Ada · plan: premium")

    # A second turn arrives live in the open transcript; what was already shown is left in place.
    await message(page, asked["id"]).evaluate("node => { node.dataset.seen = 'yes'; }")
    done_event(await send(widget, conversation, f"And how long does the {marker} take to arrive?"))
    await expect(page.locator("#transcript li.msg.role-user")).to_have_count(2)
    await expect(page.locator("#transcript li.msg.role-assistant:not(.greeting)")).to_have_count(2)
    await expect(message(page, asked["id"])).to_have_attribute("data-seen", "yes")
    await expect(page.locator("#announcer")).to_contain_text(
        f"The customer wrote: And how long does the {marker}"
    )


async def test_take_over_reply_hand_back_and_resolve(page, live_url, agent, widget):
    agent_id, headers = agent
    marker = unique_marker("stove")
    conversation = await start(widget)
    done_event(await send(widget, conversation, f"My {marker} arrived dented."))
    cid = conversation["conversation_id"]
    await sign_in(page, live_url, headers)
    await open_conversation(page, cid, marker)
    status = page.locator("#conversation-status")
    listed_status = row(page, cid).locator(".badge")
    actions = page.get_by_role("group", name="Conversation actions")

    await expect(status).to_have_attribute("data-status", "bot")
    await expect(actions.get_by_role("button")).to_have_text(["Take over", "Resolve"])
    await actions.get_by_role("button", name="Take over").click()
    await expect(status).to_have_attribute("data-status", "open")
    await expect(listed_status).to_have_attribute("data-status", "open")
    await expect(page.locator("#conversation-assignee")).to_contain_text("(you)")
    await expect(page.locator("#conversation-handoff")).to_contain_text("An agent took it over")
    await expect(actions.get_by_role("button")).to_have_text(["Unassign", "Hand back to bot", "Resolve"])

    answer = f"Sorry about the {marker}: a replacement ships today."
    await page.get_by_label("Reply to the customer").fill(answer)
    await page.get_by_label("Reply to the customer").press("Enter")
    sent = page.locator("#transcript li.msg.role-agent")
    await expect(sent.locator(".msg-text")).to_have_text(answer)
    await expect(page.get_by_label("Reply to the customer")).to_have_value("")
    history = await customer_history(widget, conversation)
    assert [(m["role"], m["text"]) for m in history["messages"]][-1] == ("agent", answer)
    assert history["messages"][-1]["author_agent_id"] == agent_id

    await actions.get_by_role("button", name="Hand back to bot").click()
    await expect(status).to_have_attribute("data-status", "bot")
    await expect(listed_status).to_have_attribute("data-status", "bot")
    await expect(page.locator("#conversation-assignee")).to_have_text("Unassigned")

    await actions.get_by_role("button", name="Resolve").click()
    await expect(status).to_have_attribute("data-status", "resolved")
    await expect(status).to_have_text("Resolved")
    await expect(listed_status).to_have_attribute("data-status", "resolved")
    await expect(actions.get_by_role("button")).to_have_text(["Reopen"])
    await expect(page.get_by_label("Reply to the customer")).to_be_disabled()
    assert (await transcript(widget, headers, cid))["status"] == "resolved"

    await actions.get_by_role("button", name="Reopen").click()
    await expect(status).to_have_attribute("data-status", "open")
    await expect(page.get_by_label("Reply to the customer")).to_be_enabled()


async def test_a_stale_action_shows_the_api_conflict(page, live_url, agent, widget):
    _, headers = agent
    marker = unique_marker("kettle")
    conversation = await start(widget)
    done_event(await send(widget, conversation, f"Is the {marker} still in stock?"))
    cid = conversation["conversation_id"]
    # Without the live stream the console cannot know someone else resolved it meanwhile.
    await page.route("**/api/v1/events", lambda route: route.abort())
    await page.goto(live_url + "/console")
    await page.get_by_label("API token").fill(token_of(headers))
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#live-state")).to_have_attribute("data-state", "reconnecting")
    await open_conversation(page, cid, marker)
    assert (await widget.post(f"{API}/{cid}/resolve", headers=headers)).status_code == 200

    await page.get_by_role("group", name="Conversation actions").get_by_role("button", name="Resolve").click()
    await expect(page.locator("#conversation-error")).to_have_text("this conversation is already resolved")
    await expect(page.locator("#conversation-status")).to_have_attribute("data-status", "resolved")

    # Once the stream comes back (with backoff), the console catches up with what it missed.
    assert (await widget.post(f"{API}/{cid}/reopen", headers=headers)).status_code == 200
    await page.unroute("**/api/v1/events")
    await expect(page.locator("#live-state")).to_have_attribute("data-state", "live", timeout=40_000)
    await expect(page.locator("#conversation-status")).to_have_attribute("data-status", "open")
    await expect(row(page, cid).locator(".badge")).to_have_attribute("data-status", "open")


async def test_canned_responses_are_created_and_picked_with_a_slash(page, live_url, agent, widget):
    _, headers = agent
    marker = unique_marker("tarp")
    shortcode = unique_marker("ship")
    expanded = f"Orders ship within 2 working days ({marker})."
    conversation = await start(widget)
    done_event(await send(widget, conversation, f"When does the {marker} ship?"))
    cid = conversation["conversation_id"]
    await sign_in(page, live_url, headers)

    await page.get_by_role("button", name="Canned responses").click()
    dialog = page.get_by_role("dialog", name="Canned responses")
    await expect(dialog).to_be_visible()
    await dialog.get_by_label("Shortcode").fill(shortcode)
    await dialog.get_by_label("Text").fill(expanded)
    await dialog.get_by_role("button", name="Create").click()
    await expect(dialog.locator(f'#canned-list li[data-shortcode="{shortcode}"]')).to_contain_text(expanded)
    await dialog.get_by_label("Shortcode").fill(shortcode)
    await dialog.get_by_label("Text").fill("A duplicate")
    await dialog.get_by_role("button", name="Create").click()
    await expect(dialog.locator("#canned-error")).to_have_text(f"shortcode '{shortcode}' exists")
    await dialog.get_by_role("button", name="Close").click()
    await expect(dialog).to_be_hidden()

    await open_conversation(page, cid, marker)
    reply = page.get_by_label("Reply to the customer")
    suggestions = page.get_by_role("listbox", name="Canned responses")
    # The mouse picks one...
    await reply.press_sequentially("/" + shortcode[:8])
    option = suggestions.get_by_role("option").filter(has_text=f"/{shortcode}")
    await expect(option).to_be_visible()
    await expect(option).to_contain_text(expanded)
    await expect(page.locator("#reply-preview")).to_be_hidden()
    await screenshot(page, "canned")
    await option.click()
    await expect(reply).to_have_value(f"/{shortcode}")
    await expect(suggestions).to_be_hidden()
    await expect(page.locator("#reply-preview")).to_contain_text(expanded)
    # ...and so does the keyboard.
    await reply.fill("/no-such-shortcode")
    await expect(page.locator("#reply-preview")).to_have_text("No canned response /no-such-shortcode.")
    await reply.fill("")
    await reply.press_sequentially("/" + shortcode[:9])
    await expect(suggestions.get_by_role("option")).to_have_count(1)
    await expect(suggestions.get_by_role("option")).to_have_attribute("aria-selected", "true")
    await reply.press("Enter")
    await expect(reply).to_have_value(f"/{shortcode}")
    await reply.press("Enter")

    await expect(page.locator("#transcript li.msg.role-agent .msg-text")).to_have_text(expanded)
    history = await customer_history(widget, conversation)
    assert history["messages"][-1]["text"] == expanded
    await expect(page.locator("#conversation-status")).to_have_attribute("data-status", "open")


async def test_private_notes_stay_private(page, live_url, agent, widget):
    _, headers = agent
    marker = unique_marker("tent")
    conversation = await start(widget, context={"name": "Ada", "order": "NW-1042"})
    cid = conversation["conversation_id"]
    done_event(
        await send(widget, conversation, f"My {marker} pole snapped on the first trip. Can I get a new one?")
    )
    assert (await widget.post(f"{API}/{cid}/take-over", headers=headers)).status_code == 200
    await widget.post(
        f"{API}/{cid}/messages",
        headers=headers,
        json={"text": "Hi Ada, sorry to hear that! I'm sending a replacement pole today."},
    )
    await sign_in(page, live_url, headers)
    await open_conversation(page, cid, marker)

    note = f"Second broken pole this month on {marker}: flag the batch to the warehouse."
    await page.get_by_role("tab", name="Private note").click()
    await expect(page.get_by_role("textbox", name="Private note")).to_be_focused()
    await page.get_by_role("textbox", name="Private note").fill(note)
    await page.get_by_role("button", name="Add note").click()
    shown = page.locator("#transcript li.note")
    await expect(shown.locator(".msg-text")).to_have_text(note)
    await expect(shown.locator(".private-label")).to_have_text("Private note")
    await expect(shown).to_have_attribute("aria-label", "Private note")
    await expect(page.get_by_role("textbox", name="Private note")).to_have_value("")
    # The note sits after the messages it follows, and looks nothing like a message.
    assert await shown.evaluate("n => n.previousElementSibling.classList.contains('role-agent')")
    assert await shown.evaluate("n => getComputedStyle(n).borderStyle") == "dashed"
    await screenshot(page, "transcript")

    assert [n["text"] for n in (await transcript(widget, headers, cid))["notes"]] == [note]
    history = await customer_history(widget, conversation)
    assert note not in str(history) and "warehouse" not in str(history)


async def test_customer_html_is_shown_as_text_and_never_runs(page, live_url, agent, widget):
    _, headers = agent
    marker = unique_marker("xss")
    conversation = await start(widget)
    cid = conversation["conversation_id"]
    # With a person in charge the bot stays silent, so the payload is the inbox's last message.
    assert (await widget.post(f"{API}/{cid}/take-over", headers=headers)).status_code == 200
    payload = f"{XSS} {marker}"
    assert [kind for kind, _ in await send(widget, conversation, payload)] == ["accepted", "waiting"]
    await widget.post(f"{API}/{cid}/notes", headers=headers, json={"text": f"<b>note</b> {XSS}"})

    await sign_in(page, live_url, headers)
    await search(page, marker)
    await expect(row(page, cid).locator(".row-last")).to_have_text(payload)
    await row(page, cid).click()
    await expect(page.locator("#transcript li.msg.role-user .msg-text")).to_have_text(payload)
    await expect(page.locator("#transcript li.note .msg-text")).to_have_text(f"<b>note</b> {XSS}")
    await page.get_by_label("Reply to the customer").fill(f"Echo: {XSS}")
    await page.get_by_label("Reply to the customer").press("Enter")
    await expect(page.locator("#transcript li.msg.role-agent .msg-text")).to_have_text(f"Echo: {XSS}")

    assert await page.locator("#console img, #console b").count() == 0
    assert await page.evaluate("window.__xss") is None
