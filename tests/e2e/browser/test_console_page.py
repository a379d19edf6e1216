"""The agents' console at /console, in a real browser (Debian's Chromium) against the live app."""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from decimal import ROUND_HALF_UP, Decimal

import httpx
import pytest
from playwright.async_api import Page, expect

from backend.api.security import PAGE_POLICY
from backend.conversations.identity import sign
from backend.conversations.models import Message, MessageRole, MessageStatus
from tests.e2e.browser.conftest import IDENTITY_SECRET
from tests.helpers import auth, done_event, send, start
from tests.support import SCREENSHOTS, client_app, eventually, make_agent

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
    # A complete reply carries no status tag: only the unusual ones are tagged (and a reply the
    # answer checks doubted, "doubtful": the tiny model's text is random).
    assert reply["status"] == "complete"
    await expect(shown.locator(".msg-status")).to_have_count(1 if reply["doubt"] else 0)
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
    template = f"Hi {{customer_name}}, {{agent_name}} here: orders ship within 2 working days ({marker})."
    conversation = await start(widget, identity={"name": "Grace", "email": f"{marker}@example.com"})
    done_event(await send(widget, conversation, f"When does the {marker} ship?"))
    cid = conversation["conversation_id"]
    await sign_in(page, live_url, headers)

    await page.get_by_role("button", name="Canned responses").click()
    dialog = page.get_by_role("dialog", name="Canned responses")
    await expect(dialog).to_be_visible()
    await dialog.get_by_label("Shortcode").fill(shortcode)
    await dialog.get_by_label("Text").fill(template)
    await dialog.get_by_role("button", name="Create").click()
    await expect(dialog.locator(f'#canned-list li[data-shortcode="{shortcode}"]')).to_contain_text(template)
    await dialog.get_by_label("Shortcode").fill(shortcode)
    await dialog.get_by_label("Text").fill("A duplicate")
    await dialog.get_by_role("button", name="Create").click()
    await expect(dialog.locator("#canned-error")).to_have_text(f"shortcode '{shortcode}' exists")
    await dialog.get_by_role("button", name="Close").click()
    await expect(dialog).to_be_hidden()

    async with httpx.AsyncClient(base_url=live_url) as client:
        me = (await client.get("/api/v1/me", headers=headers)).json()
    expanded = template.replace("{customer_name}", "Grace").replace("{agent_name}", me["name"])
    await open_conversation(page, cid, marker)
    reply = page.get_by_label("Reply to the customer")
    suggestions = page.get_by_role("listbox", name="Canned responses")
    # The mouse picks one: its text, variables filled, goes into the reply box to edit...
    await reply.press_sequentially("/" + shortcode[:8])
    option = suggestions.get_by_role("option").filter(has_text=f"/{shortcode}")
    await expect(option).to_be_visible()
    await expect(option).to_contain_text(expanded)
    await expect(page.locator("#reply-preview")).to_be_hidden()
    await screenshot(page, "canned")
    await option.click()
    await expect(reply).to_have_value(expanded)
    await expect(reply).to_be_focused()
    await expect(suggestions).to_be_hidden()
    await expect(page.locator("#transcript li.msg.role-agent")).to_have_count(0)  # nothing sent yet
    await page.keyboard.type(" Sorry for the wait!")
    await reply.press("Enter")
    await expect(page.locator("#transcript li.msg.role-agent .msg-text")).to_have_text(
        f"{expanded} Sorry for the wait!"
    )
    history = await customer_history(widget, conversation)
    assert history["messages"][-1]["text"] == f"{expanded} Sorry for the wait!"
    await expect(page.locator("#conversation-status")).to_have_attribute("data-status", "open")

    # ...and so does the keyboard.
    await reply.fill("/no-such-shortcode")
    await expect(page.locator("#reply-preview")).to_have_text("No canned response /no-such-shortcode.")
    await reply.fill("")
    await reply.press_sequentially("/" + shortcode[:9])
    await expect(suggestions.get_by_role("option")).to_have_count(1)
    await expect(suggestions.get_by_role("option")).to_have_attribute("aria-selected", "true")
    await reply.press("Enter")
    await expect(reply).to_have_value(expanded)

    # A customer whose name nobody knows is greeted as "there".
    nameless = await start(widget)
    done_event(await send(widget, nameless, f"Any news on my {marker}?"))
    await reply.fill("")
    await search(page, "")
    await row(page, nameless["conversation_id"]).click()
    await expect(page.locator("#conversation-customer")).to_have_text("Anonymous customer")
    await reply.press_sequentially("/" + shortcode)
    await reply.press("Enter")
    await expect(reply).to_have_value(expanded.replace("Hi Grace,", "Hi there,"))


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
    # The same keys as a reply: Shift+Enter adds a line, Enter adds the note.
    await page.get_by_role("textbox", name="Private note").press_sequentially(note)
    await page.keyboard.press("Shift+Enter")
    await page.keyboard.type("Ask for photos.")
    await expect(page.locator("#transcript li.note")).to_have_count(0)
    await page.keyboard.press("Enter")
    note = f"{note}\nAsk for photos."
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


def shop_page(live_url: str, **identity: str) -> str:
    """A shop's page embedding the widget with who its signed-in customer is, under the app's policy."""
    attributes = " ".join(f'data-user-{name}="{value}"' for name, value in identity.items())
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>'
        f'<script src="{live_url}/static/widget.js" data-bot="shop-en" {attributes} defer></script>'
        "</body></html>"
    )


async def embed_with_identity(page: Page, live_url: str, **identity: str) -> None:
    path = f"/shop-{uuid.uuid4().hex[:8]}"

    async def fulfil(route):
        await route.fulfill(
            body=shop_page(live_url, **identity),
            content_type="text/html",
            headers={"Content-Security-Policy": PAGE_POLICY},
        )

    await page.route(live_url + path, fulfil)
    await page.goto(live_url + path)
    await page.get_by_role("button", name="Open chat").click()


async def test_who_the_customer_is_signed_or_not_shows_in_the_console(page, identity_live_url):
    live_url = identity_live_url
    _, headers = await make_agent(client_app(live_url))
    marker = unique_marker("ada")
    email = f"{marker}@example.com"
    # The shop's server signs its signed-in customer; the widget passes it on.
    signature = sign(IDENTITY_SECRET, "cus_1042", email, "Ada Lovelace")
    await embed_with_identity(
        page, live_url, id="cus_1042", email=email, name="Ada Lovelace", signature=signature
    )
    dialog = page.get_by_role("dialog", name="Chat")
    await expect(dialog.locator("[data-role=assistant]")).to_have_count(1)
    # Another page claims the same e-mail without a signature: accepted, but unverified.
    async with httpx.AsyncClient(base_url=live_url) as client:
        claimed = await start(client, identity={"email": email, "name": "Not Ada"})
    # A forged signature is refused; the customer is told in the widget's language (the server's
    # words go to the page's console, for the shop's developer).
    forged = await page.context.new_page()
    await embed_with_identity(
        forged, live_url, id="cus_1", email=email, name="Ada Lovelace", signature=signature
    )
    await expect(forged.get_by_role("dialog", name="Chat")).to_contain_text("could not confirm who you are")
    await forged.close()

    console = await page.context.new_page()
    await sign_in(console, live_url, headers)
    await search(console, email.upper())
    rows = console.locator("#conversation-list button.row")
    await expect(rows).to_have_count(2)
    verified = rows.filter(has_text="Ada Lovelace")
    await expect(verified.locator(".customer-name")).to_have_text("Ada Lovelace")
    await expect(verified.locator(".customer-email")).to_have_text(email)
    await expect(verified.locator(".identity")).to_have_text("Verified")
    unverified = row(console, claimed["conversation_id"])
    await expect(unverified.locator(".customer-name")).to_have_text("Not Ada")
    await expect(unverified.locator(".identity")).to_have_text("Unverified")
    await screenshot(console, "customers")

    await verified.click()
    customer = console.locator("#conversation-customer")
    await expect(customer.locator(".customer-name")).to_have_text("Ada Lovelace")
    await expect(customer.locator(".customer-email")).to_have_text(email)
    await expect(customer.locator(".customer-id")).to_have_text("id cus_1042")
    await expect(customer.locator(".identity")).to_have_text("Verified")
    await unverified.click()
    await expect(customer.locator(".identity")).to_have_text("Unverified")
    assert await console.evaluate("window.__xss") is None


# Records the console's desktop notifications and tones instead of only making them.
SPY_ON_ALERTS = """
window.__notifications = [];
window.__tones = 0;
const RealNotification = window.Notification;
window.Notification = class extends RealNotification {
  constructor(title, options) {
    super(title, options);
    window.__notifications.push({ title, body: options && options.body, instance: this });
  }
};
const realStart = AudioScheduledSourceNode.prototype.start;
AudioScheduledSourceNode.prototype.start = function (...args) {
  window.__tones += 1;
  return realStart.apply(this, args);
};
"""


async def test_handoff_alerts_are_opt_in_remembered_and_handed_off_conversations_are_taken_over(
    page, live_url, agent, widget
):
    _, headers = agent
    await page.context.grant_permissions(["notifications"], origin=live_url)
    await page.add_init_script(SPY_ON_ALERTS)
    await sign_in(page, live_url, headers)
    toggle = page.locator("#alerts-toggle")
    await expect(toggle).to_have_text("Alerts off")
    await expect(toggle).to_have_attribute("aria-pressed", "false")

    # Off by default: a handoff flags the row, and nothing rings.
    marker = unique_marker("rope")
    quiet = await start(widget)
    done_event(await send(widget, quiet, f"Let me talk to a real person about the {marker}"))
    await expect(row(page, quiet["conversation_id"]).locator(".flag")).to_have_text("Wants a person")
    assert await page.evaluate("window.__notifications.length + window.__tones") == 0

    await toggle.click()
    await expect(toggle).to_have_text("Alerts on")
    await expect(toggle).to_have_attribute("aria-pressed", "true")
    assert await page.evaluate("localStorage.getItem('prefixdesk.console.alerts')") == "on"
    await page.reload()  # remembered in this browser
    await expect(page.locator("#alerts-toggle")).to_have_attribute("aria-pressed", "true")
    await expect(page.locator("#live-state")).to_have_attribute("data-state", "live")

    loud = await start(widget)
    done_event(await send(widget, loud, f"I want a human for my {marker}, please"))
    notifications = await eventually_notified(page)
    assert notifications[0]["title"] == "A customer needs a person"
    assert notifications[0]["body"] == "They asked for a person."
    assert await page.evaluate("window.__tones") >= 1
    # Clicking the notification opens the conversation, handed off: "Take over", not "Assign to me".
    await page.evaluate("window.__notifications[0].instance.dispatchEvent(new Event('click'))")
    await expect(page.locator("#conversation-heading")).to_contain_text(loud["conversation_id"][:8])
    actions = page.get_by_role("group", name="Conversation actions")
    await expect(actions.get_by_role("button")).to_have_text(["Take over", "Hand back to bot", "Resolve"])
    await actions.get_by_role("button", name="Take over").click()
    await expect(page.locator("#conversation-assignee")).to_contain_text("(you)")
    await expect(actions.get_by_role("button")).to_have_text(["Unassign", "Hand back to bot", "Resolve"])

    await page.locator("#alerts-toggle").click()
    await expect(page.locator("#alerts-toggle")).to_have_text("Alerts off")
    assert await page.evaluate("localStorage.getItem('prefixdesk.console.alerts')") == "off"


async def eventually_notified(page: Page) -> list[dict]:
    return await eventually(
        lambda: page.evaluate("window.__notifications.map(({ title, body }) => ({ title, body }))"),
        timeout_s=30,
        what="a desktop notification",
    )


async def test_only_unusual_message_statuses_are_tagged(page, live_url, agent, widget):
    _, headers = agent
    marker = unique_marker("lamp")
    conversation = await start(widget)
    done_event(await send(widget, conversation, f"Does the {marker} need batteries?"))
    cid = conversation["conversation_id"]
    asked, answered = (await transcript(widget, headers, cid))["messages"]
    app = client_app(live_url)
    async with app.state.services.sessions() as db:
        # The reply was doubted, and later ones were stopped, failed, or are still streaming.
        reply = await db.get(Message, answered["id"])
        reply.doubt = "the policy does not mention batteries"
        for seq, status in (
            (3, MessageStatus.INTERRUPTED),
            (4, MessageStatus.FAILED),
            (5, MessageStatus.GENERATING),
        ):
            db.add(
                Message(
                    conversation_id=cid,
                    seq=seq,
                    role=MessageRole.ASSISTANT,
                    status=status,
                    text=f"part {seq}",
                )
            )
        await db.commit()
    await sign_in(page, live_url, headers)
    await open_conversation(page, cid, marker)

    tags = page.locator("#transcript li.msg .msg-status")
    await expect(tags).to_have_text(["doubtful", "stopped", "failed", "streaming"])
    await expect(message(page, asked["id"]).locator(".tag")).to_have_count(0)
    await expect(message(page, answered["id"]).locator(".msg-status")).to_have_text(["doubtful"])


async def test_every_agent_sees_colleagues_names_and_their_notes_live(page, live_url, agent, widget):
    _, headers = agent
    _, colleague = await make_agent(client_app(live_url))
    async with httpx.AsyncClient(base_url=live_url) as client:
        colleague_name = (await client.get("/api/v1/me", headers=colleague)).json()["name"]
    marker = unique_marker("boot")
    conversation = await start(widget)
    cid = conversation["conversation_id"]
    done_event(await send(widget, conversation, f"My {marker} sole came off."))
    assert (await widget.post(f"{API}/{cid}/take-over", headers=colleague)).status_code == 200
    await widget.post(f"{API}/{cid}/messages", headers=colleague, json={"text": f"Sorry about the {marker}!"})

    # Not an admin, yet the console names the colleague, not "agent #id".
    await sign_in(page, live_url, headers)
    await open_conversation(page, cid, marker)
    await expect(row(page, cid).locator(".row-meta")).to_contain_text(colleague_name)
    await expect(page.locator("#conversation-assignee")).to_have_text(colleague_name)
    await expect(page.locator("#transcript li.msg.role-agent .who")).to_have_text(f"Agent: {colleague_name}")

    # A colleague who joined after this console signed in writes a note: it appears live, with
    # their name; the customer's stream never carries it.
    latecomer_id, latecomer = await make_agent(client_app(live_url))
    async with httpx.AsyncClient(base_url=live_url) as client:
        latecomer_name = (await client.get("/api/v1/me", headers=latecomer)).json()["name"]
    customer_events: list[dict] = []
    ready = asyncio.Event()
    listener = asyncio.create_task(customer_stream(live_url, conversation, customer_events, ready))
    await asyncio.wait_for(ready.wait(), 10)
    try:
        note = f"Warranty case for the {marker}: check the batch."
        added = await widget.post(f"{API}/{cid}/notes", headers=latecomer, json={"text": note})
        assert added.status_code == 201
        shown = page.locator("#transcript li.note")
        await expect(shown.locator(".msg-text")).to_have_text(note)
        await expect(shown.locator(".who")).to_have_text(latecomer_name)
        await widget.post(
            f"{API}/{cid}/messages", headers=colleague, json={"text": "A new pair is on its way."}
        )
        await eventually(
            lambda: "message.created" in [e["type"] for e in customer_events],
            timeout_s=30,
            what="the agent's reply on the customer's stream",
        )
    finally:
        listener.cancel()
    assert "note.created" not in [e["type"] for e in customer_events]
    assert note not in json.dumps(customer_events) and "Warranty" not in json.dumps(customer_events)
    assert note not in json.dumps(await customer_history(widget, conversation))
    assert (await transcript(widget, headers, cid))["notes"][0]["agent_id"] == latecomer_id


async def customer_stream(live_url: str, conversation: dict, into: list, ready: asyncio.Event) -> None:
    """The customer's live stream, as the widget reads it."""
    path = f"/api/v1/widget/conversations/{conversation['conversation_id']}/events"
    async with (
        httpx.AsyncClient(base_url=live_url, timeout=None) as client,
        client.stream("GET", path, headers=auth(conversation)) as response,
    ):
        assert response.status_code == 200
        ready.set()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                into.append(json.loads(line[5:]))
