"""The chat widget's script, delivered as one file at /static/widget.js.

Shops embed the widget with a single <script> tag, so it must be one file with no imports. Its
source is kept in parts under templates/widget/ (plain script fragments sharing one function
scope); they are joined here, in the order of `PARTS`, inside one strict-mode function, once when
this module loads: the script never changes while the app runs.
"""

import hashlib
from pathlib import Path

from fastapi import APIRouter, Request, Response

from backend.api.pages import TEMPLATES_DIR

WIDGET_DIR = TEMPLATES_DIR / "widget"
# Each part may use what the parts before it define.
PARTS = (
    "settings.js",  # the settings read from the script tag (and how to embed the widget)
    "strings.js",  # its texts in English and Chinese; choosing a language for a BCP 47 tag
    "strings-es.js",  # ... in Spanish
    "strings-fr.js",  # ... in French
    "strings-de.js",  # ... in German
    "strings-pt.js",  # ... in Portuguese
    "strings-it.js",  # ... in Italian
    "language.js",  # the language of this page's texts, once every language is in
    "styles.js",  # its CSS
    "dom.js",  # small DOM helpers, icons, reply text with links
    "view.js",  # its DOM in a shadow root
    "state.js",  # the conversation's state; the saved conversation
    "render.js",  # messages, notices, errors, typing dots, badge
    "server.js",  # requests, errors, server-sent events
    "team.js",  # the status and the header; who answers once the bot steps aside, office hours
    "feedback.js",  # thumbs up and down under the bot's finished replies
    "rating.js",  # the 1-5 rating asked for once the conversation is resolved
    "conversation.js",  # starting or restoring the conversation
    "live.js",  # the live event stream
    "send.js",  # sending a message, the streamed reply
    "main.js",  # opening, closing, keyboard, mounting
)
MEDIA_TYPE = "text/javascript; charset=utf-8"

router = APIRouter(include_in_schema=False)


def build_script(directory: Path = WIDGET_DIR, parts: tuple[str, ...] = PARTS) -> str:
    """The parts, in order, as the body of one `(() => { "use strict"; ... })();`."""
    body = "\n".join((directory / part).read_text(encoding="utf-8").rstrip() + "\n" for part in parts)
    return '(() => {\n  "use strict";\n\n' + body + "})();\n"


SCRIPT = build_script().encode("utf-8")
ETAG = f'"{hashlib.sha256(SCRIPT).hexdigest()[:32]}"'


def etag_matches(if_none_match: str | None, etag: str = ETAG) -> bool:
    """Whether an If-None-Match header names this version (weak or strong, or `*`)."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


@router.api_route("/static/widget.js", methods=["GET", "HEAD"])
async def widget_script(request: Request) -> Response:
    """The widget's script; 304 when the browser already has this version."""
    headers = {"ETag": ETAG, "Cache-Control": "no-cache"}
    if etag_matches(request.headers.get("if-none-match")):
        return Response(status_code=304, headers=headers)
    return Response(SCRIPT, media_type=MEDIA_TYPE, headers=headers)
