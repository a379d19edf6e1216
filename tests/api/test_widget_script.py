"""The pages' scripts as files: the widget delivered as one script, and the sources kept small."""

import re

import httpx
import pytest

from backend.api import widget_script
from backend.api.pages import TEMPLATES_DIR
from backend.app import create_app
from backend.config import Settings

MAX_LINES = 500
MARKUP_SINKS = ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function")


@pytest.fixture
async def app_client():
    """The app's routes without its lifespan: serving files needs no database or engine."""
    transport = httpx.ASGITransport(app=create_app(Settings()))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield client


async def test_the_widget_is_one_script_made_of_its_parts_in_order(app_client):
    response = await app_client.get("/static/widget.js")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/javascript; charset=utf-8"
    script = response.text
    assert script.startswith('(() => {\n  "use strict";\n')
    assert script.endswith("\n})();\n")
    assert script.count('"use strict"') == 1
    position = 0
    for part in widget_script.PARTS:
        text = (widget_script.WIDGET_DIR / part).read_text(encoding="utf-8").strip()
        found = script.find(text, position)
        assert found >= position, f"{part} is missing or out of order"
        position = found + len(text)
    # Every part is listed, and none is listed twice.
    on_disk = sorted(path.name for path in widget_script.WIDGET_DIR.glob("*.js"))
    assert sorted(widget_script.PARTS) == on_disk


async def test_the_widget_script_answers_304_to_the_version_the_browser_has(app_client):
    first = await app_client.get("/static/widget.js")
    etag = first.headers["etag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = await app_client.get("/static/widget.js", headers={"If-None-Match": header})
        assert again.status_code == 304, header
        assert again.content == b""
        assert again.headers["etag"] == etag
    changed = await app_client.get("/static/widget.js", headers={"If-None-Match": '"something-else"'})
    assert changed.status_code == 200 and changed.content == first.content
    head = await app_client.head("/static/widget.js")
    assert head.status_code == 200 and head.headers["etag"] == etag


async def test_the_other_static_files_are_still_served(app_client):
    for path in ("/static/console/main.js", "/static/shared/dom.js", "/static/admin/main.js"):
        response = await app_client.get(path)
        assert response.status_code == 200, path
        assert "javascript" in response.headers["content-type"], path
    assert (await app_client.get("/static/console.js")).status_code == 404


def test_no_file_under_templates_is_over_500_lines():
    long = {
        str(path.relative_to(TEMPLATES_DIR)): lines
        for path in TEMPLATES_DIR.rglob("*")
        if path.is_file() and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_widget_stands_alone():
    for part in widget_script.PARTS:
        text = (widget_script.WIDGET_DIR / part).read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|export)\b", text, re.MULTILINE), part
        assert "shared/" not in text, part


def test_no_script_parses_markup():
    """Text from customers, agents or the server reaches the pages as text only."""
    scripts = [*TEMPLATES_DIR.rglob("*.js")]
    assert scripts
    for path in scripts:
        text = path.read_text(encoding="utf-8")
        for sink in MARKUP_SINKS:
            assert sink not in text, f"{path.relative_to(TEMPLATES_DIR)} uses {sink}"
