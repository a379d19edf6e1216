"""The widget in every language it has, in Debian's Chromium: each table of its texts (its own,
the team's, the rating's) has English's keys in every language, with the same arguments; a tag
finds its language's texts ("es-MX" Spanish), any other English; counts are written as the
language writes them; a Spanish shop shows a Spanish widget, a German one German numbers, and a
Spanish bot's rating prompt is Spanish, its refusal too (never the server's English words)."""

import asyncio
import re
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from playwright.async_api import expect

from backend.api.widget_script import PARTS, WIDGET_DIR
from backend.app import create_app
from backend.config import Settings
from backend.engine.interface import Engine
from backend.languages import APP_LANGUAGES
from tests.e2e.browser.test_widget_page import stored_conversation
from tests.helpers import auth
from tests.support import client_app, copy_prompts, eventually, free_port, make_agent, served, wait_ready

LANGUAGES = set(APP_LANGUAGES)  # the app's own words come whole in each of them
TABLES = ("STRINGS", "TEAM_STRINGS", "RATING_STRINGS")
ARGUMENTS = (0, 1, 2, 5, 1234)
# The parts that define the tables and choose among them, in the script's order.
TABLE_PARTS = (*PARTS[PARTS.index("strings.js") : PARTS.index("language.js") + 1], "team.js", "rating.js")

# Those parts run with stand-ins for what they take from the page and the parts left out; the
# tables come back as data: each function's arity and what it says for each of ARGUMENTS.
TABLES_IN_A_PAGE = """(() => {
  "use strict";
  const lang = %(lang)s;
  const script = { dataset: {} };
  const shadow = { append() {} };
  const el = () => null;
  %(source)s
  const described = (texts) => Object.fromEntries(Object.entries(texts).map(([key, value]) => [
    key,
    typeof value === "function"
      ? { arity: value.length, says: %(arguments)s.map((n) => value(...Array(value.length).fill(n))) }
      : value,
  ]));
  const tables = { STRINGS, TEAM_STRINGS, RATING_STRINGS };
  return {
    tables: Object.fromEntries(Object.entries(tables).map(([name, table]) => [
      name, Object.fromEntries(Object.entries(table).map(([code, texts]) => [code, described(texts)])),
    ])),
    language,
    counter: T.counter(1234, 12345),
    chosen: %(tags)s.map((tag) => Object.values(tables).map((table) => languageIn(table, tag))),
  };
})()"""

TAGS = {
    "es-MX": "es",
    "pt_BR": "pt",
    "FR-ca": "fr",
    "de": "de",
    "it-CH": "it",
    "zh-Hant-TW": "zh",
    "en-GB": "en",
    "sv-SE": "en",
    "constructor": "en",
    "": "en",
}


async def tables_in(page, lang: str) -> dict:
    source = "\n".join((WIDGET_DIR / part).read_text(encoding="utf-8") for part in TABLE_PARTS)
    script = TABLES_IN_A_PAGE % {
        "lang": repr(lang),
        "source": source,
        "arguments": list(ARGUMENTS),
        "tags": repr(list(TAGS)),
    }
    return await page.evaluate(script)


def texts_of(entries: dict) -> list[str]:
    """Every text of one language's table: its strings, and what its functions said."""
    said = [[value] if isinstance(value, str) else value["says"] for value in entries.values()]
    return [text for texts in said for text in texts]


def assert_like_english(texts: dict, english: dict, where: str) -> None:
    assert list(texts) == list(english), where
    for key, value in texts.items():
        if isinstance(english[key], str):
            assert isinstance(value, str) and value.strip(), (where, key)
            continue
        assert isinstance(value, dict) and value["arity"] == english[key]["arity"], (where, key)
        assert all(isinstance(said, str) and said.strip() for said in value["says"]), (where, key)
        # Each argument shows up in what is said (no count or name left out).
        small = zip(ARGUMENTS[:4], value["says"][:4], strict=True)
        assert all(str(n) in said for n, said in small), (where, key)


async def test_every_language_has_every_text_of_english_with_the_same_arguments(page):
    found = await tables_in(page, "en")
    for name in TABLES:
        table = found["tables"][name]
        assert set(table) == LANGUAGES, name
        for code, texts in table.items():
            assert_like_english(texts, table["en"], f"{name}.{code}")
            if code != "en":  # translated, not copied: a few words may be the same ("Chat")
                same = [key for key, value in texts.items() if value == table["en"][key]]
                assert len(same) <= len(texts) // 5, (name, code, same)
        # French puts a no-break space before ? ! : ; and never an ordinary one.
        for text in texts_of(table["fr"]):
            assert set(re.findall(r"(.)[?!:;]", text)) <= {"\u00a0"}, text


# What a language says of one and of many: (language, key, n, text).
ONE_AND_MANY = [
    ("en", "newMessages", 1, "1 new message"),
    ("en", "newMessages", 2, "2 new messages"),
    ("es", "newMessages", 1, "1 mensaje nuevo"),
    ("es", "newMessages", 5, "5 mensajes nuevos"),
    ("fr", "charactersLeft", 0, "0 caractère restant"),  # French: 0 and 1 are singular
    ("fr", "charactersLeft", 1, "1 caractère restant"),
    ("fr", "charactersLeft", 2, "2 caractères restants"),
    ("de", "newMessages", 1, "1 neue Nachricht"),
    ("de", "newMessages", 2, "2 neue Nachrichten"),
    ("pt", "charactersOver", 1, "1 caractere a mais"),
    ("pt", "charactersOver", 2, "2 caracteres a mais"),
    ("it", "newMessages", 1, "1 nuovo messaggio"),
    ("it", "newMessages", 5, "5 nuovi messaggi"),
]


async def test_each_language_says_one_and_many_its_own_way(page):
    strings = (await tables_in(page, "en"))["tables"]["STRINGS"]
    said = [
        (code, key, n, strings[code][key]["says"][ARGUMENTS.index(n)]) for code, key, n, _ in ONE_AND_MANY
    ]
    assert said == ONE_AND_MANY


@pytest.mark.parametrize(
    ("lang", "language", "counter"),
    [
        ("en", "en", "1,234 / 12,345"),
        ("de-at", "de", "1.234 / 12.345"),
        ("es-mx", "es", "1234 / 12.345"),  # Spanish groups from five digits on
        ("sv", "en", "1,234 / 12,345"),
    ],
)
async def test_a_tag_finds_its_languages_texts_and_numbers(page, lang, language, counter):
    found = await tables_in(page, lang)
    assert found["language"] == language
    assert found["counter"] == counter
    # The same choice for the three tables.
    assert found["chosen"] == [[code] * len(TABLES) for code in TAGS.values()]


# A shop's page, at the app's origin, with the widget of `server`.
SHOP_PAGE = """<!doctype html>
<html lang="{page_lang}"><head><meta charset="utf-8"><title>Tienda</title></head>
<body><h1>Tienda</h1>
<script src="/static/widget.js" data-bot="shop-en" data-server="{server}" {data_lang} defer></script>
</body></html>"""


async def open_shop(page, url: str, *, server: str = "", page_lang: str = "en", data_lang: str = "") -> None:
    """The shop's page at `url` (its origin is the app's), served by the browser itself."""
    html = SHOP_PAGE.format(
        page_lang=page_lang, server=server, data_lang=f'data-lang="{data_lang}"' if data_lang else ""
    )
    await page.route(url, lambda route: route.fulfill(content_type="text/html", body=html))
    await page.goto(url)


@pytest.fixture
async def script_only_url() -> AsyncIterator[str]:
    """The app serving its files on loopback, without its lifespan: no database, no engine."""
    port = free_port()
    app = create_app(Settings())
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started or task.done(), timeout_s=30, what="uvicorn started")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def test_a_spanish_shop_shows_the_widget_in_spanish_before_anything_is_sent(page, script_only_url):
    gone = f"http://127.0.0.1:{free_port()}"  # no chat server there: the widget says so, in Spanish
    await open_shop(page, f"{script_only_url}/tienda", server=gone, data_lang="es")
    launcher = page.get_by_role("button", name="Abrir chat")
    await launcher.click()
    dialog = page.get_by_role("dialog", name="Chat")
    await expect(dialog).to_be_visible()
    box = dialog.get_by_role("textbox", name="Escriba su mensaje")
    await expect(box).to_have_attribute("placeholder", "Escriba un mensaje…")
    await expect(dialog.get_by_role("button", name="Enviar")).to_be_visible()
    await expect(dialog.get_by_role("log", name="Mensajes")).to_be_visible()
    error = dialog.locator(".error")
    await expect(error).to_contain_text(
        "No se ha podido iniciar el chat. No hemos podido conectar con el servidor del chat."
    )
    await expect(error.get_by_role("button", name="Reintentar")).to_be_visible()
    offline = "Sin conexión · no se puede acceder al servidor del chat"
    await expect(dialog.locator(".subtitle")).to_have_text(offline)
    await dialog.get_by_role("button", name="Cerrar chat").click()
    await expect(launcher).to_have_attribute("aria-expanded", "false")


async def test_a_german_shop_counts_in_german_against_the_servers_limit(page, live_url):
    """No data-lang: the page's lang, with its region, picks German; the limit is the server's."""
    await open_shop(page, f"{live_url}/laden", page_lang="de-AT")
    await page.get_by_role("button", name="Chat öffnen").click()
    dialog = page.get_by_role("dialog", name="Chat")
    await expect(dialog.locator(".subtitle")).to_have_text("Virtueller Assistent · antwortet sofort")
    box = dialog.get_by_role("textbox", name="Geben Sie Ihre Nachricht ein")
    await box.fill("x" * 4001)
    await expect(dialog.locator(".counter")).to_have_text("4.001 / 4.000 · 1 Zeichen zu viel")
    await box.press("Enter")  # refused before it is sent: no reply is written
    await expect(dialog.locator(".composer-error")).to_have_text(
        "Ihre Nachricht hat 4.001 Zeichen, erlaubt sind höchstens 4.000. Bitte kürzen Sie sie."
    )
    await expect(dialog.get_by_role("log").locator("[data-role=user]")).to_have_count(0)


SPANISH_GREETING = "Hola, soy el asistente de Northwind Outfitters. ¿En qué puedo ayudarle?"


@pytest.fixture
async def spanish_live_url(tiny_settings: Settings, tiny_engine: Engine, tmp_path) -> AsyncIterator[str]:
    """The app with shop-en speaking Spanish (Spain): the demo shop embeds it with its language."""
    prompts = copy_prompts(tmp_path)
    bot = prompts / "shop-en" / "bot.toml"
    text = bot.read_text(encoding="utf-8")
    text = text.replace('language = "en"', 'language = "es-ES"', 1)
    text = re.sub(r'^greeting = ".*"$', f'greeting = "{SPANISH_GREETING}"', text, count=1, flags=re.MULTILINE)
    bot.write_text(text, encoding="utf-8")
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts})
    async with served(settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        yield url


async def test_a_spanish_bots_rating_prompt_and_its_refusal_are_spanish(page, spanish_live_url):
    await page.goto(spanish_live_url + "/")
    await page.get_by_role("button", name="Abrir chat").click()
    dialog = page.get_by_role("dialog", name="Northwind Outfitters support")
    log = dialog.get_by_role("log", name="Mensajes")
    await expect(log.locator("[data-role=assistant] .text")).to_have_text([SPANISH_GREETING])
    await expect(dialog.locator(".subtitle")).to_have_text("Asistente virtual · respuesta inmediata")
    conversation = await stored_conversation(page)
    _, agent = await make_agent(client_app(spanish_live_url))
    async with httpx.AsyncClient(base_url=spanish_live_url) as http:
        cid = conversation["conversation_id"]
        resolved = await http.post(f"/api/v1/conversations/{cid}/resolve", headers=agent)
        assert resolved.status_code == 200, resolved.text
        prompt = dialog.get_by_role("form", name="¿Qué tal le hemos atendido? Valore esta conversación")
        await expect(prompt).to_be_visible()
        resolved_subtitle = "Conversación resuelta · escriba para continuar"
        await expect(dialog.locator(".subtitle")).to_have_text(resolved_subtitle)
        # Rated meanwhile in another tab: the server refuses this one (409, in English).
        rated = await http.post(
            f"/api/v1/widget/conversations/{cid}/rating", headers=auth(conversation), json={"score": 5}
        )
        assert rated.status_code == 201, rated.text
    await prompt.get_by_role("button", name="4 de 5").click()
    await prompt.get_by_label("¿Desea añadir algo? (opcional)").fill("Muy amables")
    submit = prompt.get_by_role("button", name="Enviar valoración")
    await submit.click()
    await expect(prompt.locator(".rating-note")).to_have_text("Esta conversación ya no se puede valorar.")
    await expect(submit).to_be_disabled()
    await page.reload()
    await page.get_by_role("button", name="Abrir chat").click()
    thanks = "Gracias por valorar esta conversación con un 5 de 5."
    await expect(dialog.get_by_role("status").filter(has_text=thanks)).to_be_visible()
