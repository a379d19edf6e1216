"""Server-rendered pages (Jinja2, autoescaped) and their static files."""

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from backend.config import PROJECT_ROOT

TEMPLATES_DIR = PROJECT_ROOT / "templates"
templates = Jinja2Templates(directory=TEMPLATES_DIR)
router = APIRouter(include_in_schema=False)


def static_files() -> StaticFiles:
    return StaticFiles(directory=Path(TEMPLATES_DIR / "static"))


def _bots(request: Request) -> list[dict]:
    chat = request.app.state.chat
    return [
        {"slug": slug, "name": live.definition.name, "language": live.definition.language}
        for slug, live in chat.bots.items()
    ]


@router.get("/", response_class=HTMLResponse)
async def demo_shop(request: Request, bot: str = "shop-en") -> HTMLResponse:
    """A demo shop page with the chat widget embedded, as a shop would embed it."""
    bots = _bots(request)
    if bot not in {b["slug"] for b in bots}:
        bot = "shop-en"
    return templates.TemplateResponse(request, "shop.html", {"bot": bot, "bots": bots})


@router.get("/console", response_class=HTMLResponse)
async def agent_console(request: Request) -> HTMLResponse:
    """The agents' console (signs in with an API token, then talks to the agents' API)."""
    return templates.TemplateResponse(request, "console.html", {"bots": _bots(request)})


@router.get("/admin", response_class=HTMLResponse)
async def admin_page(request: Request) -> HTMLResponse:
    """The admin page (admin token): QPS, response times, cache hit rate, engine load."""
    return templates.TemplateResponse(request, "admin.html", {"bots": _bots(request)})
